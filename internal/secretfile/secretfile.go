// Package secretfile reads the files of a node's configuration that hold
// secrets: the targets file (DSNs with passwords) and the alerts
// configuration (SMTP logins, webhook secrets). Secrets live there only
// (docs/SECURITY.md), so such a file must be the node's user's alone.
package secretfile

import (
	"fmt"
	"os"
	"runtime"
)

// Read returns the file at path, refusing one that its group or other users
// can read or write, with what to do. what names the file in messages
// ("targets file"). Windows has no mode bits to check: there the file's ACL
// protects it.
func Read(what, path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s %s can be read by other users (mode %04o) and it holds secrets: run chmod 600 %s", what, path, st.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return b, nil
}
