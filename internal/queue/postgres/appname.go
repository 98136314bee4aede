package postgres

import (
	"github.com/jackc/pgx/v5"

	"readpast/internal/appname"
)

// nameSessions gives cfg's sessions the application_name name, unless the
// DSN names them itself (a name the DBA chose stands), and returns the name
// the listener's connection gets: ListenerApplicationName followed by the
// DSN's own name, or appname.For(appname.Listener, node).
func nameSessions(cfg *pgx.ConnConfig, name, node string) (listener string) {
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	if own := cfg.RuntimeParams["application_name"]; own != "" {
		return ListenerApplicationName + " " + own
	}
	cfg.RuntimeParams["application_name"] = name
	return appname.For(appname.Listener, node)
}
