package target

import (
	"bufio"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"readpast/internal/dialect"
	"readpast/internal/secretfile"
)

// Reserved target names. StoreName is the store's own database, a target on
// every node; DefaultName is the node's --target-dsn (or the store, when no
// --target-dsn is given), where a task that names no target and whose queue
// names none runs (docs/TARGETS.md).
const (
	StoreName   = "store"
	DefaultName = "default"
)

// MaxPool bounds a target's pool size.
const MaxPool = 1000

// Spec is one named target as the operator configured it. DSN is a secret:
// it never leaves the node (docs/TARGETS.md, "Secrets"); use Info for
// anything shown.
type Spec struct {
	Name string
	DSN  string
	Tags []string
	// Pool caps the connections the node keeps to the target; 0 keeps the
	// dialect's default (one per running task).
	Pool int
}

var targetNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ValidName reports whether name may name a target or a tag: 1–64 letters,
// digits, '_', '.' or '-' (no ':', so "tag:prod" in a fan-out list is never a
// target's name).
func ValidName(name string) bool {
	return targetNamePattern.MatchString(name) && strings.Trim(name, ".") != ""
}

// ParseSpec reads one entry, NAME=DSN, with optional attributes after the
// name: NAME;tags:prod,eu;pool:8=DSN. The error never quotes the DSN.
func ParseSpec(entry string) (Spec, error) {
	head, dsn, ok := strings.Cut(strings.TrimSpace(entry), "=")
	if !ok || strings.TrimSpace(dsn) == "" {
		return Spec{}, errors.New("a target is written NAME=DSN (optionally NAME;tags:a,b;pool:N=DSN)")
	}
	parts := strings.Split(head, ";")
	s := Spec{Name: strings.TrimSpace(parts[0]), DSN: strings.TrimSpace(dsn)}
	if !ValidName(s.Name) {
		return Spec{}, fmt.Errorf("target name %q: use 1 to 64 letters, digits, '_', '.' or '-'", s.Name)
	}
	if s.Name == StoreName || s.Name == DefaultName {
		return Spec{}, fmt.Errorf("target name %q is reserved (%q is the store's own database, %q the --target-dsn or else the store): choose another", s.Name, StoreName, DefaultName)
	}
	for _, attr := range parts[1:] {
		key, val, _ := strings.Cut(strings.TrimSpace(attr), ":")
		switch key {
		case "tags":
			for _, tag := range strings.Split(val, ",") {
				tag = strings.TrimSpace(tag)
				if !ValidName(tag) {
					return Spec{}, fmt.Errorf("target %s: tag %q: use 1 to 64 letters, digits, '_', '.' or '-'", s.Name, tag)
				}
				s.Tags = append(s.Tags, tag)
			}
		case "pool":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || n > MaxPool {
				return Spec{}, fmt.Errorf("target %s: pool %q: use a whole number from 1 to %d", s.Name, val, MaxPool)
			}
			s.Pool = n
		default:
			return Spec{}, fmt.Errorf("target %s: unknown attribute %q: use tags:a,b or pool:N", s.Name, key)
		}
	}
	sort.Strings(s.Tags)
	if _, _, err := dialect.Parse(s.DSN); err != nil {
		return Spec{}, fmt.Errorf("target %s: the DSN is not one ReadPast reads: use sqlserver://, postgres://, sqlite:// or a file path", s.Name)
	}
	return s, nil
}

// ParseList reads entries one a line (READPAST_TARGETS and a targets file):
// blank lines and lines starting with '#' are skipped. where names the source
// in errors ("READPAST_TARGETS", a file name).
func ParseList(where, text string) ([]Spec, error) {
	var out []Spec
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := ParseSpec(line)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", where, n, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// ReadFile reads a targets file. It refuses a file that its group or other
// users can read or write: the file holds passwords.
func ReadFile(path string) ([]Spec, error) {
	b, err := secretfile.Read("targets file", path)
	if err != nil {
		return nil, err
	}
	return ParseList(path, string(b))
}

// Merge joins target lists in order, refusing a name given twice.
func Merge(lists ...[]Spec) ([]Spec, error) {
	seen := map[string]bool{}
	var out []Spec
	for _, l := range lists {
		for _, s := range l {
			if seen[s.Name] {
				return nil, fmt.Errorf("target %s is configured twice: keep one", s.Name)
			}
			seen[s.Name] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// Secrets returns the parts of the DSNs that must never be shown: each
// password, and each whole DSN. Redact uses them.
func Secrets(dsns ...string) []string {
	var out []string
	for _, dsn := range dsns {
		if dsn == "" {
			continue
		}
		out = append(out, dsn)
		if u, err := url.Parse(dsn); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok && pw != "" {
				out = append(out, pw, url.QueryEscape(pw), url.PathEscape(pw))
			}
		}
		if u, err := url.Parse(dsn); err == nil {
			for k, v := range u.Query() {
				if strings.EqualFold(k, "password") && len(v) > 0 && v[0] != "" {
					out = append(out, v[0])
				}
			}
		}
		// key=value DSNs: "...;password=secret;..." and "password=secret ...".
		for _, sep := range []string{";", " "} {
			for _, kv := range strings.Split(dsn, sep) {
				k, v, ok := strings.Cut(kv, "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "password") && strings.TrimSpace(v) != "" {
					out = append(out, strings.TrimSpace(v))
				}
			}
		}
	}
	// Longest first, so a DSN is replaced whole before its password.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// Redact replaces every secret in s with "***".
func Redact(s string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 3 {
			s = strings.ReplaceAll(s, sec, "***")
		}
	}
	return s
}

// redactedError is err with secrets replaced in its text.
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

// RedactError returns err with the secrets of dsns removed from its text,
// keeping it unwrappable (errors.Is still sees the cause).
func RedactError(err error, dsns ...string) error {
	if err == nil {
		return nil
	}
	return redactedError{msg: Redact(err.Error(), Secrets(dsns...)), err: err}
}
