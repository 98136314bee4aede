package mssqllogin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/microsoft/go-mssqldb/msdsn"
	"github.com/stretchr/testify/require"
)

// Every login method go-mssqldb takes, told apart from the DSN as go-mssqldb
// itself tells them apart, on each platform's default provider.
func TestDescribeFollowsTheDriversChoice(t *testing.T) {
	t.Parallel()
	cases := []struct {
		dsn, goos, method, principal string
	}{
		{"sqlserver://rp:pw@db", "linux", SQLAuth, "rp"},
		{"sqlserver://rp:pw@db", "windows", SQLAuth, "rp"},
		{"sqlserver://db", "windows", SSPI, "this process's Windows account"},
		{`sqlserver://CORP%5Csvc-rp:pw@db`, "windows", SSPI, `CORP\svc-rp`},
		{`sqlserver://CORP%5Csvc-rp:pw@db`, "linux", NTLM, `CORP\svc-rp`},
		{`sqlserver://CORP%5Csvc-rp:pw@db?authenticator=ntlm`, "windows", NTLM, `CORP\svc-rp`},
		{"sqlserver://svc-rp@db?authenticator=krb5&krb5-realm=CORP.EXAMPLE&krb5-keytabfile=/etc/rp.keytab", "linux", Kerberos, "svc-rp@CORP.EXAMPLE"},
		{"sqlserver://db?authenticator=krb5&krb5-credcachefile=/tmp/krb5cc_1000", "linux", Kerberos, "the principal of credential cache /tmp/krb5cc_1000"},
		{"sqlserver://db.database.windows.net?database=rp&fedauth=ActiveDirectoryDefault", "linux", EntraID + " (ActiveDirectoryDefault)", "the default Azure credential (environment, workload or managed identity, Azure CLI)"},
		{"sqlserver://db.database.windows.net?fedauth=ActiveDirectoryManagedIdentity", "windows", EntraID + " (ActiveDirectoryManagedIdentity)", "the system-assigned managed identity"},
		{"sqlserver://db.database.windows.net?fedauth=ActiveDirectoryManagedIdentity&user+id=0f1e2d3c", "linux", EntraID + " (ActiveDirectoryManagedIdentity)", "the user-assigned managed identity 0f1e2d3c"},
		{"sqlserver://0f1e2d3c%40tenant:secret@db.database.windows.net?fedauth=ActiveDirectoryServicePrincipal", "linux", EntraID + " (ActiveDirectoryServicePrincipal)", "0f1e2d3c@tenant"},
		{"sqlserver://dba%40corp.example:pw@db.database.windows.net?fedauth=ActiveDirectoryPassword&applicationclientid=abc", "linux", EntraID + " (ActiveDirectoryPassword)", "dba@corp.example"},
	}
	for _, c := range cases {
		cfg, err := msdsn.Parse(c.dsn)
		require.NoError(t, err, c.dsn)
		got, err := describe(cfg, c.goos)
		require.NoError(t, err, c.dsn)
		require.Equal(t, Login{Method: c.method, Principal: c.principal}, got, "%s on %s", c.dsn, c.goos)
		require.NotContains(t, got.String(), "pw", "a login's description never holds its password")
		require.NotContains(t, got.String(), "secret", "a login's description never holds its secret")
	}
}

// A DSN that cannot log in is refused with what to give instead, before any
// connection is tried.
func TestDescribeRefusesLoginsThatCannotWork(t *testing.T) {
	t.Parallel()
	cases := []struct{ dsn, goos, says string }{
		{"sqlserver://db", "linux", "names no user"},
		{"sqlserver://db?authenticator=winsspi", "linux", "Windows only"},
		{"sqlserver://rp:pw@db?authenticator=ntlm", "linux", `DOMAIN\user`},
		{"sqlserver://rp:pw@db?authenticator=gssapi", "linux", "not one ReadPast knows"},
	}
	for _, c := range cases {
		cfg, err := msdsn.Parse(c.dsn)
		require.NoError(t, err, c.dsn)
		_, err = describe(cfg, c.goos)
		require.ErrorContains(t, err, c.says, c.dsn)
		require.NotContains(t, err.Error(), "pw", "an error never repeats the password")
	}
}

// Connector uses azuread's connector: go-mssqldb's own ignores fedauth and
// would try a SQL login with the client id and secret, so a service
// principal without its secret is refused only by azuread's.
func TestConnectorTakesEntraIDLogins(t *testing.T) {
	t.Parallel()
	_, _, err := Connector("sqlserver://0f1e2d3c%40tenant@db.database.windows.net?fedauth=ActiveDirectoryServicePrincipal", "ReadPast test")
	require.ErrorContains(t, err, "password", "a service principal without its secret is refused, naming what is missing")
	require.ErrorContains(t, err, EntraID)

	for _, dsn := range []string{
		"sqlserver://db.database.windows.net?database=rp&fedauth=ActiveDirectoryDefault",
		"sqlserver://db.database.windows.net?database=rp&fedauth=ActiveDirectoryManagedIdentity",
		"sqlserver://0f1e2d3c%40tenant:secret@db.database.windows.net?fedauth=ActiveDirectoryServicePrincipal",
		"sqlserver://dba%40corp.example:pw@db.database.windows.net?fedauth=ActiveDirectoryPassword&applicationclientid=abc",
	} {
		c, login, err := Connector(dsn, "ReadPast test")
		require.NoError(t, err, dsn)
		require.NotNil(t, c)
		require.True(t, strings.HasPrefix(login.Method, EntraID), dsn)
	}
	_, _, err = Connector("sqlserver://db?fedauth=ActiveDirectoryTelepathy", "ReadPast test")
	require.ErrorContains(t, err, "ActiveDirectoryTelepathy")
}

// Kerberos reads its files when the connector is made, so a wrong path is
// said at start; with krb5.conf and a keytab in place the connector is made.
func TestConnectorChecksKerberosFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "krb5.conf")
	require.NoError(t, os.WriteFile(conf, []byte("[libdefaults]\n  default_realm = CORP.EXAMPLE\n[realms]\n  CORP.EXAMPLE = {\n    kdc = kdc.corp.example\n  }\n"), 0o600))
	keytab := filepath.Join(dir, "rp.keytab")
	base := "sqlserver://svc-rp@db.corp.example?authenticator=krb5&krb5-realm=CORP.EXAMPLE&krb5-configfile=" + conf

	_, _, err := Connector(base+"&krb5-keytabfile="+keytab, "ReadPast test")
	require.ErrorContains(t, err, "krb5-keytabfile does not exist", "a keytab that is not there is named")
	require.ErrorContains(t, err, "docs/SQLSERVER.md")

	require.NoError(t, os.WriteFile(keytab, []byte{0x05, 0x02}, 0o600)) // an empty keytab (version 2)
	_, login, err := Connector(base+"&krb5-keytabfile="+keytab, "ReadPast test")
	require.NoError(t, err)
	require.Equal(t, Login{Method: Kerberos, Principal: "svc-rp@CORP.EXAMPLE"}, login)

	_, _, err = Connector("sqlserver://db.corp.example?authenticator=krb5&krb5-configfile="+conf+"&krb5-credcachefile="+filepath.Join(dir, "none"), "ReadPast test")
	require.ErrorContains(t, err, "krb5-credcachefile does not exist")
}

// Sessions are named for ReadPast unless the DSN names them itself.
func TestWithAppName(t *testing.T) {
	t.Parallel()
	got, err := WithAppName("sqlserver://rp:p%40ss@db:1433?database=q&encrypt=disable", "ReadPast store node-1")
	require.NoError(t, err)
	cfg, err := msdsn.Parse(got)
	require.NoError(t, err)
	require.Equal(t, "ReadPast store node-1", cfg.AppName)
	require.Equal(t, "p@ss", cfg.Password, "the rest of the DSN is kept as it was")
	require.Equal(t, "q", cfg.Database)

	mine := "sqlserver://rp:pw@db?App+Name=nightly-etl"
	got, err = WithAppName(mine, "ReadPast store node-1")
	require.NoError(t, err)
	require.Equal(t, mine, got, "an app name the DBA chose stands")

	_, err = WithAppName("sqlserver://rp:pa%zz@db", "x")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "pa%zz", "the error does not repeat the DSN")
}
