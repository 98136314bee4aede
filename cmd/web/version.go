package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version, commit and date are stamped at build time by scripts/release:
// -ldflags "-X main.version=1.2.0 -X main.commit=<sha> -X main.date=<RFC 3339>".
// A plain `go build` in a git checkout leaves commit and date to the VCS
// stamp Go records itself (buildInfo).
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// buildInfo is the version, commit and date of this binary: the stamped
// ones, else those Go recorded from the checkout it was built in ("-dirty"
// when it had changes), else "unknown".
func buildInfo() (v, c, d string) {
	v, c, d = version, commit, date
	if info, ok := debug.ReadBuildInfo(); ok && (c == "" || d == "") {
		modified := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if c == "" {
					c = s.Value
				}
			case "vcs.time":
				if d == "" {
					d = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && commit == "" && c != "" {
			c += "-dirty"
		}
	}
	if c == "" {
		c = "unknown"
	}
	if d == "" {
		d = "unknown"
	}
	return v, c, d
}

func versionCmd(_ context.Context, _ []string, _ func(string) string, out, _ io.Writer) int {
	v, c, d := buildInfo()
	fmt.Fprintf(out, "readpast %s\ncommit %s\nbuilt %s\n%s %s/%s\n", v, c, d, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}
