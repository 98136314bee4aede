// Package mssqllogin opens go-mssqldb connectors for every login SQL Server
// takes, chosen by the DSN as go-mssqldb documents it: SQL authentication
// (user:password), Windows integrated authentication (SSPI on Windows; NTLM
// with DOMAIN\user, or Kerberos with authenticator=krb5, elsewhere) and
// Microsoft Entra ID (fedauth=ActiveDirectory…, through go-mssqldb's azuread
// connector). The store, every target and selftest open their SQL Server
// connections here, so all of them take the same logins. Every connector names
// its sessions (the TDS "app name"), so a DBA can tell ReadPast's sessions
// apart in sys.dm_exec_sessions.program_name.
package mssqllogin

import (
	"fmt"
	"net/url"
	"runtime"
	"strings"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/azuread"
	"github.com/microsoft/go-mssqldb/integratedauth/krb5" // registers authenticator=krb5
	"github.com/microsoft/go-mssqldb/msdsn"
)

// The login methods Describe names.
const (
	SQLAuth  = "SQL Server authentication"
	SSPI     = "Windows integrated authentication (SSPI)"
	NTLM     = "Windows integrated authentication (NTLM)"
	Kerberos = "Windows integrated authentication (Kerberos, authenticator=krb5)"
	EntraID  = "Microsoft Entra ID" // followed by the fedauth workflow
)

// Login is how a DSN logs in: the method and the principal it names. It
// never holds a password, secret or token.
type Login struct {
	Method    string
	Principal string
}

// String is "method as principal", for logs and selftest's report.
func (l Login) String() string { return l.Method + " as " + l.Principal }

// AppNameKey is the DSN parameter that names a session (sys.dm_exec_sessions.program_name).
const AppNameKey = "app name"

// Connector returns the connector for dsn, its sessions named app unless
// the DSN names them itself (app name=…), and how it logs in. It fails, with
// what to change, when the DSN does not parse or asks for a login that cannot
// work as given; whether the server accepts the login shows only on connect.
func Connector(dsn, app string) (*mssql.Connector, Login, error) {
	named, err := WithAppName(dsn, app)
	if err != nil {
		return nil, Login{}, err
	}
	cfg, err := msdsn.Parse(named)
	if err != nil {
		return nil, Login{}, fmt.Errorf("parsing the sqlserver dsn: %w", err)
	}
	login, err := describe(cfg, runtime.GOOS)
	if err != nil {
		return nil, Login{}, err
	}
	if login.Method == Kerberos {
		// Read krb5.conf, the keytab or the credential cache now, so a path
		// that is wrong is said at start, not at the first connection.
		if _, err := krb5.AuthProviderFunc.GetIntegratedAuthenticator(cfg); err != nil {
			return nil, Login{}, fmt.Errorf("the Kerberos login (authenticator=krb5) cannot start: %w: give krb5-configfile with either krb5-keytabfile, user id and krb5-realm, or krb5-credcachefile (docs/SQLSERVER.md)", err)
		}
	}
	// azuread's connector is go-mssqldb's own for every DSN without fedauth,
	// and the Entra ID one for a DSN with it.
	c, err := azuread.NewConnector(named)
	if err != nil {
		return nil, Login{}, fmt.Errorf("logging in with %s: %w (docs/SQLSERVER.md lists each fedauth value's parameters)", login.Method, err)
	}
	return c, login, nil
}

// Describe says how dsn logs in on this platform, without connecting.
func Describe(dsn string) (Login, error) {
	cfg, err := msdsn.Parse(dsn)
	if err != nil {
		return Login{}, fmt.Errorf("parsing the sqlserver dsn: %w", err)
	}
	return describe(cfg, runtime.GOOS)
}

// describe follows go-mssqldb's choice: fedauth selects Entra ID (azuread);
// otherwise authenticator names the integrated provider, and without it the
// platform's default provider (winsspi on Windows, ntlm elsewhere) logs in when
// it accepts the user (none, or DOMAIN\user, on Windows; DOMAIN\user
// elsewhere), and SQL authentication when it does not.
func describe(cfg msdsn.Config, goos string) (Login, error) {
	p := cfg.Parameters
	user := cfg.User
	if w := p["fedauth"]; w != "" {
		return Login{Method: EntraID + " (" + w + ")", Principal: entraPrincipal(w, user)}, nil
	}
	domainUser := strings.ContainsRune(user, '\\')
	switch strings.ToLower(p["authenticator"]) {
	case "krb5":
		return Login{Method: Kerberos, Principal: kerberosPrincipal(cfg)}, nil
	case "ntlm":
		if !domainUser {
			return Login{}, fmt.Errorf("authenticator=ntlm needs user id as DOMAIN\\user (with its password); %q is not", user)
		}
		return Login{Method: NTLM, Principal: user}, nil
	case "winsspi":
		if goos != "windows" {
			return Login{}, fmt.Errorf("authenticator=winsspi works on Windows only: on %s use authenticator=krb5 (docs/SQLSERVER.md)", goos)
		}
		return sspi(user), nil
	case "":
	default:
		return Login{}, fmt.Errorf("authenticator=%s is not one ReadPast knows: use krb5, ntlm or (on Windows) winsspi, or leave it out", p["authenticator"])
	}
	switch {
	case goos == "windows" && (user == "" || domainUser):
		return sspi(user), nil
	case domainUser:
		return Login{Method: NTLM, Principal: user}, nil
	case user == "":
		return Login{}, fmt.Errorf("the sqlserver DSN names no user: give user:password for SQL authentication, authenticator=krb5 for a domain login (Kerberos) or fedauth=ActiveDirectory… for Entra ID (docs/SQLSERVER.md)")
	}
	return Login{Method: SQLAuth, Principal: user}, nil
}

func sspi(user string) Login {
	if user == "" {
		return Login{Method: SSPI, Principal: "this process's Windows account"}
	}
	return Login{Method: SSPI, Principal: user}
}

func kerberosPrincipal(cfg msdsn.Config) string {
	switch {
	case cfg.User != "" && cfg.Parameters["krb5-realm"] != "" && !strings.Contains(cfg.User, "@"):
		return cfg.User + "@" + cfg.Parameters["krb5-realm"]
	case cfg.User != "":
		return cfg.User
	case cfg.Parameters["krb5-credcachefile"] != "":
		return "the principal of credential cache " + cfg.Parameters["krb5-credcachefile"]
	}
	return "the principal of the default credential cache"
}

// entraPrincipal names who an Entra ID workflow logs in as, from the DSN.
func entraPrincipal(workflow, user string) string {
	w := strings.ToLower(workflow)
	switch {
	case w == "activedirectorymanagedidentity" || w == "activedirectorymsi":
		if user == "" {
			return "the system-assigned managed identity"
		}
		return "the user-assigned managed identity " + user
	case w == "activedirectorydefault":
		return "the default Azure credential (environment, workload or managed identity, Azure CLI)"
	case user != "":
		return user
	}
	return "the credential the " + workflow + " workflow finds"
}

// WithAppName returns dsn with its sessions named app, unless it names them
// already (an app name the DBA chose stands).
func WithAppName(dsn, app string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		// url's error quotes the DSN, password included: never repeat it.
		return "", fmt.Errorf("the sqlserver DSN is not a valid URL: check its quoting (percent-encode @, : and / in the password)")
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, AppNameKey) {
			return dsn, nil
		}
	}
	q.Set(AppNameKey, app)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
