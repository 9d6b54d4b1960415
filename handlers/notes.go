package handlers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"hookbox/config"
)

// ProgramNotes says, for each command in cfg (targets and the alert) whose
// program this process cannot run as things stand, why: missing, not
// executable, or a relative path that follows serve's working directory.
// check prints them as notes and serve logs them as warnings; neither
// refuses the config, which may be checked on another machine or before
// the program is installed.
func ProgramNotes(cfg config.Config) []string {
	type cmd struct {
		what, program string
		run           *Command // looks the program up as a run does
	}
	var cmds []cmd
	for _, t := range cfg.Targets {
		if len(t.Command) > 0 {
			cmds = append(cmds, cmd{fmt.Sprintf("target %q", t.Name), t.Command[0], NewCommand(t.Command, t.Env, 0)})
		}
	}
	if len(cfg.Alert.Command) > 0 {
		cmds = append(cmds, cmd{"the alert", cfg.Alert.Command[0], NewCommand(cfg.Alert.Command, nil, 0)})
	}
	var notes []string
	for _, c := range cmds {
		if c.program == "" {
			continue // the config check names it
		}
		if !strings.Contains(c.program, "/") {
			if _, err := c.run.Program(); err != nil {
				notes = append(notes, fmt.Sprintf("%s runs %q: %v; give its absolute path", c.what, c.program, errors.Unwrap(err)))
			}
			continue
		}
		if !filepath.IsAbs(c.program) {
			notes = append(notes, fmt.Sprintf("%s runs %q, a relative path: it follows serve's working directory; give an absolute path", c.what, c.program))
		}
		switch fi, err := os.Stat(c.program); {
		case err != nil:
			notes = append(notes, fmt.Sprintf("%s runs %s: %v", c.what, c.program, errors.Unwrap(err)))
		case !fi.Mode().IsRegular():
			notes = append(notes, fmt.Sprintf("%s runs %s, which is not a file", c.what, c.program))
		case fi.Mode().Perm()&0o111 == 0:
			notes = append(notes, fmt.Sprintf("%s runs %s, which is not executable (chmod +x)", c.what, c.program))
		}
	}
	return notes
}
