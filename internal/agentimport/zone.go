package agentimport

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"readpast/internal/schedule"
	"readpast/internal/sqlrun"
)

// Clock is the Agent's server's clock as the import needs it: its time zone
// (IANA), its UTC offset now and its date (Agent's schedules are in the
// server's local time).
type Clock struct {
	Zone   string
	Offset time.Duration // the server's UTC offset now
	Today  int           // the server's date, YYYYMMDD
}

// ReadClock reads the server's clock and names its time zone: zone when
// given (--time-zone), else the server's own (CURRENT_TIMEZONE_ID(), SQL
// Server 2022 and Azure SQL Managed Instance, whose Windows name is mapped to
// IANA). Either way the zone must be at the server's UTC offset now: a zone
// that is not would shift every schedule.
func ReadClock(ctx context.Context, db *sql.DB, zone string) (Clock, error) {
	var (
		c       Clock
		minutes int
	)
	if err := db.QueryRowContext(ctx, clockQuery).Scan(&minutes, &c.Today); err != nil {
		return c, fmt.Errorf("reading the server's clock failed: %w", sqlrun.DescribeMSSQL(err))
	}
	c.Offset = time.Duration(minutes) * time.Minute
	if zone == "" {
		var err error
		if zone, err = serverZone(ctx, db); err != nil {
			return c, fmt.Errorf("%w; the server's clock is at %s now", err, formatOffset(c.Offset))
		}
	}
	loc, err := schedule.LoadZone(zone)
	if err != nil {
		return c, fmt.Errorf("--time-zone: %w", err)
	}
	if _, off := time.Now().In(loc).Zone(); time.Duration(off)*time.Second != c.Offset {
		return c, fmt.Errorf("the time zone %s is at %s now but the server's clock is at %s: Agent's schedules are in the server's time, so give the server's zone with --time-zone",
			zone, formatOffset(time.Duration(off)*time.Second), formatOffset(c.Offset))
	}
	c.Zone = zone
	return c, nil
}

// clockQuery reads the server's UTC offset in minutes and its date as
// YYYYMMDD, by arithmetic (Babelfish ignores CONVERT's style 112).
const clockQuery = `DECLARE @now datetimeoffset = SYSDATETIMEOFFSET();
SELECT DATEPART(TZOFFSET, @now), YEAR(@now) * 10000 + MONTH(@now) * 100 + DAY(@now);`

// serverZone asks the server for its time zone and names it in IANA's terms:
// CURRENT_TIMEZONE_ID() on SQL Server 2022 and Azure SQL Managed Instance;
// before 2022, on Windows, the zone's key name in the registry, which
// xp_regread reads for a sysadmin (the query DBAs use; undocumented, so only
// a fallback).
func serverZone(ctx context.Context, db *sql.DB) (string, error) {
	var windows string
	if err := db.QueryRowContext(ctx, `SELECT CURRENT_TIMEZONE_ID();`).Scan(&windows); err != nil {
		var value string
		if regErr := db.QueryRowContext(ctx, registryZone).Scan(&value, &windows); regErr != nil || windows == "" {
			return "", fmt.Errorf("the server did not say its time zone (CURRENT_TIMEZONE_ID() needs SQL Server 2022 or Azure SQL Managed Instance: %v): give it with --time-zone, e.g. --time-zone Europe/Paris",
				sqlrun.DescribeMSSQL(err))
		}
	}
	if iana, ok := windowsZones[windows]; ok {
		return iana, nil
	}
	if _, err := time.LoadLocation(windows); err == nil && windows != "Local" {
		return windows, nil
	}
	return "", fmt.Errorf("the server's time zone %q has no IANA name this import knows: give it with --time-zone, e.g. --time-zone Europe/Paris", windows)
}

// registryZone reads Windows' time zone key name ("Romance Standard Time").
const registryZone = `EXEC master.dbo.xp_regread N'HKEY_LOCAL_MACHINE',
    N'SYSTEM\CurrentControlSet\Control\TimeZoneInformation', N'TimeZoneKeyName';`

func formatOffset(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	return fmt.Sprintf("UTC%s%02d:%02d", sign, int(d.Hours()), int(d.Minutes())%60)
}
