package config

import (
	"fmt"
	"slices"
	"strings"

	"hookbox/provider"
	"hookbox/refetch"
)

// validateRefetch checks a target's refetch keys and resolves
// refetch_auth_env (when getenv is set: serve and check, not the read
// commands).
func validateRefetch(sc scope, t *Target, sources []Source, getenv func(string) string) {
	t.RefetchCredential = ""
	hasPreset, hasURL := sc.present("refetch", t.Refetch != ""), sc.present("refetch_url", t.RefetchURL != "")
	if !hasPreset && !hasURL {
		for _, k := range []struct {
			key string
			set bool
		}{{"refetch_auth_env", t.RefetchAuthEnv != ""}, {"refetch_rate", t.RefetchRate != ""}, {"refetch_base_url", t.RefetchBaseURL != ""}} {
			if sc.present(k.key, k.set) {
				sc.add(k.key, "", "only with refetch or refetch_url")
			}
		}
		return
	}
	with := strings.Join(refetch.Presets(), ", ")
	switch {
	case hasPreset && hasURL:
		sc.add("refetch_url", "", "set refetch or refetch_url, not both")
	case t.Refetch != "":
		p, ok := provider.Lookup(t.Refetch)
		switch {
		case !ok:
			sc.addf("refetch", t.Refetch, "no such preset; the presets with a fetch API: %s (for another API, set refetch_url)", with)
		case p.Refetch == nil:
			sc.addf("refetch", t.Refetch, "this preset has no fetch API hookbox knows; those that have: %s (for another API, set refetch_url)", with)
		default:
			names := t.SourceNames()
			for _, s := range sources {
				if slices.Contains(names, s.Name) && s.Verify != t.Refetch {
					sc.addf("refetch", t.Refetch, "source %s is verify = %q: refetch = %q reads %s events only", s.Name, s.Verify, t.Refetch, t.Refetch)
				}
			}
		}
		if !sc.present("refetch_auth_env", t.RefetchAuthEnv != "") {
			sc.add("refetch_auth_env", "", "required with refetch: the environment variable holding the API's key or token")
		}
	case t.RefetchURL != "":
		if _, err := refetch.ParseTemplate(t.RefetchURL); err != nil {
			sc.add("refetch_url", t.RefetchURL, err.Error())
		}
	}
	if t.RefetchBaseURL != "" {
		if hasURL {
			sc.add("refetch_base_url", t.RefetchBaseURL, "only with refetch: refetch_url names its own host")
		} else if _, err := refetch.CheckBaseURL(t.RefetchBaseURL); err != nil {
			sc.add("refetch_base_url", t.RefetchBaseURL, err.Error())
		}
	}
	if t.RefetchRate != "" {
		if _, err := refetch.ParseRate(t.RefetchRate); err != nil {
			sc.add("refetch_rate", t.RefetchRate, err.Error())
		}
	}
	name := t.RefetchAuthEnv
	switch {
	case name == "":
	case !envNameRe.MatchString(name):
		sc.add("refetch_auth_env", name, "not a valid environment variable name (letters, digits and _, not starting with a digit)")
	case getenv == nil:
	default:
		v := getenv(name)
		switch {
		case v == "":
			sc.addf("refetch_auth_env", name, "environment variable %s is unset or empty", name)
		case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			sc.add("refetch_auth_env", name, fmt.Sprintf("environment variable %s holds a control character, which cannot travel in a header", name))
		default:
			t.RefetchCredential = v
		}
	}
}
