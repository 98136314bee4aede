//go:build linux

package main

import (
	"fmt"
	"os/exec"
	"os/user"
)

// defaultServiceUser is the dedicated account the systemd unit runs as.
func defaultServiceUser() string { return "readpast" }

// serviceDataDir is the unit's state directory (StateDirectory=readpast).
func serviceDataDir() string { return "/var/lib/readpast" }

// ensureSystemUser makes name a system user, with no login shell and no home
// of its own, unless it exists.
func ensureSystemUser(name string) error {
	if _, err := user.Lookup(name); err == nil {
		return nil
	}
	out, err := exec.Command("useradd", "--system", "--no-create-home", "--home-dir", serviceDataDir(),
		"--shell", "/usr/sbin/nologin", name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("making the system user %s (useradd: %s): %w; make it yourself, or give an existing one with --user", name, out, err)
	}
	return nil
}
