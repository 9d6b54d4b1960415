package config

import (
	"net"
	"strconv"
)

// Admin configures the operators' listener: the web UI, the JSON API and
// GET /metrics. With a config it is off unless Listen is set, so that
// several instances on one machine never clash on a default port.
type Admin struct {
	Listen   string `toml:"listen"`    // "" = off
	TokenEnv string `toml:"token_env"` // the variable holding the bearer token; required off loopback

	// Token is the resolved TokenEnv value: once set, every admin request
	// must carry it (Authorization: Bearer …). Never log it.
	Token string `toml:"-"`
}

// DefaultMaxQueued is [store] max_queued's default: the waiting
// deliveries above which new webhooks are answered 503.
const DefaultMaxQueued = 1_000_000

func validateAdmin(sc scope, a *Admin, server string, getenv func(string) string) {
	a.Token = ""
	if _, port, _ := net.SplitHostPort(a.Listen); a.Listen != "" && a.Listen == server && port != "0" {
		sc.add("listen", a.Listen, "the same address as server.listen: the admin listener needs a port of its own")
	} else if a.Listen != "" {
		if _, port, err := net.SplitHostPort(a.Listen); err != nil {
			sc.add("listen", a.Listen, `want host:port, e.g. "127.0.0.1:8081"`)
		} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			sc.add("listen", a.Listen, "port must be a number from 0 to 65535")
		} else if a.TokenEnv == "" && !IsLoopback(a.Listen) {
			sc.add("token_env", "", "required when admin.listen is not a loopback address: name the environment variable holding the admin bearer token")
		}
	}
	switch {
	case a.TokenEnv == "":
	case !envNameRe.MatchString(a.TokenEnv):
		sc.add("token_env", a.TokenEnv, "not a valid environment variable name (letters, digits and _, not starting with a digit)")
	case getenv == nil:
	default:
		v := getenv(a.TokenEnv)
		if v == "" {
			sc.addf("token_env", a.TokenEnv, "environment variable %s is unset or empty", a.TokenEnv)
			return
		}
		a.Token = v
	}
}

// validateBudgets checks [store] max_queued and min_free_disk.
func validateBudgets(sc scope, s *Store) {
	if s.MaxQueued < 1 {
		sc.add("max_queued", strconv.FormatInt(s.MaxQueued, 10), "must be at least 1")
	}
	if s.MinFreeDisk < 0 {
		sc.add("min_free_disk", s.MinFreeDisk.String(), "must not be negative")
	}
	if s.PostgreSQL() {
		if _, set := sc.p.lines[sc.key+".min_free_disk"]; set {
			sc.add("min_free_disk", s.MinFreeDisk.String(), "SQLite's: a PostgreSQL store's disk is the database server's")
		}
	}
}
