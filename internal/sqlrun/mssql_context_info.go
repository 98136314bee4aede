package sqlrun

import "encoding/hex"

// MSSQLContextInfo is the SET CONTEXT_INFO literal that names a session after
// an attempt on SQL Server, which names a session at login only
// (program_name): the name's bytes and a zero byte, so that the name of
// attempt 1 does not match the start of attempt 10's, whether the server pads
// the value to 128 bytes or not. Other sessions see it in
// sys.dm_exec_sessions.context_info (Microsoft: "SET CONTEXT_INFO
// (Transact-SQL)"). The target's body sessions and the store's transactional
// sessions carry it; the target's EndSessions finds them by it.
func MSSQLContextInfo(name string) string {
	return "0x" + hex.EncodeToString(append([]byte(name), 0))
}
