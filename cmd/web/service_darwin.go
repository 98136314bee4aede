//go:build darwin

package main

// defaultServiceUser is "": a launchd daemon runs as root unless told
// otherwise (--user names an existing account).
func defaultServiceUser() string { return "" }

// serviceDataDir is the daemon's working directory, where the default SQLite
// store lives.
func serviceDataDir() string { return "/Library/Application Support/ReadPast" }

// ensureSystemUser: macOS accounts are made with sysadminctl or a profile, not here.
func ensureSystemUser(string) error { return nil }
