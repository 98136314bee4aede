package sqlrun

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// PingSQLite opens db's first connection to a SQLite file, trying again while
// the file is busy. Every connection ReadPast opens switches the file to WAL
// (journal_mode(WAL) in its DSN), and SQLite answers one of two such switches
// at once SQLITE_BUSY without waiting out the busy timeout (waiting could
// deadlock them): stores and targets opened together on one new file (a
// node's store, default and named targets; node processes started together)
// failed at random. A connection whose open failed is not pooled, so each try
// opens a new one.
func PingSQLite(ctx context.Context, db *sql.DB) error {
	const tries, pause = 50, 20 * time.Millisecond
	for i := 1; ; i++ {
		err := db.PingContext(ctx)
		var coded interface{ Code() int }
		if err == nil || i == tries || !errors.As(err, &coded) || coded.Code()&0xff != sqliteBusy {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// sqliteBusy is SQLITE_BUSY, the primary result code of a locked file.
const sqliteBusy = 5
