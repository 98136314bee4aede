//go:build windows

package main

import (
	"os"
	"path/filepath"
)

// defaultServiceUser is "": LocalSystem, the service manager's default
// (--user takes a gMSA, DOMAIN\name$, or the virtual account NT SERVICE\readpast).
func defaultServiceUser() string { return "" }

// serviceDataDir is where the default SQLite store lives: %ProgramData%\ReadPast.
func serviceDataDir() string {
	base := os.Getenv("ProgramData")
	if base == "" {
		base = `C:\ProgramData`
	}
	return filepath.Join(base, "ReadPast")
}

// ensureSystemUser: Windows makes virtual accounts itself; a gMSA is the
// domain's to make.
func ensureSystemUser(string) error { return nil }
