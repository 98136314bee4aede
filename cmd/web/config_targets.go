package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"readpast/internal/target"
)

// targetFlags are the named targets' settings (docs/TARGETS.md): --target
// NAME=DSN (repeatable), READPAST_TARGETS (one entry a line), and
// --targets-file (a file of such lines, refused when others can read it).
type targetFlags struct {
	given     entryList // --target, in the order given
	env       string    // READPAST_TARGETS
	file      string    // --targets-file
	CheckEach time.Duration
}

// entryList is a repeatable flag; String never prints an entry (it holds a DSN).
type entryList []string

func (l *entryList) String() string     { return "" }
func (l *entryList) Set(v string) error { *l = append(*l, v); return nil }

// defineTargetFlags adds the target flags to fs.
func defineTargetFlags(fs *flag.FlagSet, t *targetFlags, env func(string, string) string, dur func(string, string) time.Duration) {
	fs.Var(&t.given, "target", "a named target NAME=DSN, or NAME;tags:a,b;pool:N=DSN; repeat it for more (env READPAST_TARGETS: one entry a line)")
	t.env = env("READPAST_TARGETS", "")
	fs.StringVar(&t.file, "targets-file", env("READPAST_TARGETS_FILE", ""), "a file of named targets, one NAME=DSN a line, readable by its owner only (chmod 600) (env READPAST_TARGETS_FILE)")
	fs.DurationVar(&t.CheckEach, "target-check", dur("READPAST_TARGET_CHECK", "15s"), "how often the node checks that each target answers (env READPAST_TARGET_CHECK)")
}

// specs reads every source of named targets: the flags, the environment,
// the file. A name given twice is refused. Errors never quote a DSN.
func (t targetFlags) specs() ([]target.Spec, error) {
	var fromFlags []target.Spec
	for _, e := range t.given {
		s, err := target.ParseSpec(e)
		if err != nil {
			return nil, fmt.Errorf("--target: %w", err)
		}
		fromFlags = append(fromFlags, s)
	}
	fromEnv, err := target.ParseList("READPAST_TARGETS", t.env)
	if err != nil {
		return nil, err
	}
	var fromFile []target.Spec
	if t.file != "" {
		if fromFile, err = target.ReadFile(t.file); err != nil {
			return nil, fmt.Errorf("--targets-file: %w", err)
		}
	}
	all, err := target.Merge(fromFlags, fromEnv, fromFile)
	if err != nil {
		return nil, err
	}
	if t.CheckEach < time.Second {
		return nil, errors.New("--target-check: use at least 1s: the check runs on every target's server")
	}
	return all, nil
}
