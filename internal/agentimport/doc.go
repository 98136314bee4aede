// Package agentimport reads the jobs of a SQL Server Agent (msdb's sysjobs,
// sysjobsteps, sysjobschedules, sysschedules and syscategories) and turns
// each into the document `POST /api/jobs` takes, created paused so that it
// does not run twice beside Agent. What ReadPast cannot do exactly as Agent
// does (a CmdExec or PowerShell step, every third week, the last weekday of
// the month, a one-time schedule) is reported line by line, never guessed:
// docs/JOBS.md, "Import from SQL Server Agent", has the whole mapping.
//
// The package reads and converts; creating the jobs goes through one small
// interface, JobCreator, so that the command needs nothing of the jobs store
// to print what it would create (--dry-run).
package agentimport
