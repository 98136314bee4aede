// Package chaos holds the fault tests of ReadPast: they build the real binary,
// run several node processes of it on one database, and hurt them the way
// production does (SIGKILL and restart, backend kills, a database restart, a
// graceful stop under load, a node frozen, its line cut or blackholed through
// internal/faultproxy), then check that nothing was lost or done twice.
// docs/RELIABILITY.md lists what each test shows and its last figures.
//
// `go test ./...` runs a short, bounded version of each; a long run is an
// environment variable away: READPAST_CHAOS=10m (the chaos and fault runs)
// and READPAST_LOAD=1m (the load run). The package has no code besides its
// tests.
package chaos
