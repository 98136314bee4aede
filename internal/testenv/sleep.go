package testenv

import (
	"database/sql"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// SleepBody is a task body that runs for about dur on the dialect and can be
// cancelled on the server: pg_sleep, WAITFOR DELAY, and the sleep function
// ReadPast gives SQLite connections (internal/sqlrun). On Babelfish, which
// has no WAITFOR (BabelfishAttention), it skips t: what a test of a long body
// shows there would be Babelfish's, not SQL Server's.
func SleepBody(t *testing.T, d Dialect, dur time.Duration) string {
	t.Helper()
	switch d {
	case Postgres:
		return fmt.Sprintf("SELECT pg_sleep(%.3f)", dur.Seconds())
	case SQLServer:
		if IsBabelfish(t, os.Getenv(MSSQLDSNEnv)) {
			t.Skip("Babelfish deviates from SQL Server here (docs/SQLSERVER.md): " + BabelfishAttention)
		}
		ms := dur.Milliseconds()
		return fmt.Sprintf("WAITFOR DELAY '%02d:%02d:%02d.%03d'", ms/3600000, ms/60000%60, ms/1000%60, ms%1000)
	}
	return fmt.Sprintf("SELECT sleep(%.3f)", dur.Seconds())
}

// CountingSleepBody is a body that keeps SQLite's virtual machine busy for
// about dur (a recursive count sized by a measured rate): what a heavy query
// is, as opposed to a sleep. sqlite3_interrupt stops it between its steps.
func CountingSleepBody(t *testing.T, dur time.Duration) string {
	t.Helper()
	return fmt.Sprintf("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) SELECT count(*) FROM c",
		int64(dur.Seconds()*sqliteCountRate(t))+1)
}

var countRate struct {
	once sync.Once
	rate float64
	err  error
}

// sqliteCountRate measures how many rows per second the recursive count makes here.
func sqliteCountRate(t *testing.T) float64 {
	t.Helper()
	countRate.once.Do(func() {
		db, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			countRate.err = err
			return
		}
		defer db.Close()
		const n = 200_000
		start := time.Now()
		var got int64
		countRate.err = db.QueryRow(fmt.Sprintf("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) SELECT count(*) FROM c", n)).Scan(&got)
		countRate.rate = n / time.Since(start).Seconds()
	})
	if countRate.err != nil {
		t.Fatalf("measuring SQLite's count rate: %v", countRate.err)
	}
	return countRate.rate
}
