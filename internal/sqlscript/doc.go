// Package sqlscript splits a task body into the batches it runs, on GO lines
// as sqlcmd does, and never changes a byte of a batch: the batches and their
// separator lines put together are the body, exactly.
//
// The rules (sqlcmd's):
//
//   - A separator is a line holding GO, in any case, alone but for blanks
//     around it, optionally followed by a repeat count ("GO 3" runs the batch
//     before it three times) and a "--" comment. "GOTO x", "go_live_date",
//     "go.tbl" and "GO;" are not separators: they are SQL.
//   - A line that starts with GO and a blank but is no separator ("GO abc",
//     "GO 0", "GO -1", "GO 3 x") is an error naming the line, as sqlcmd
//     refuses it, rather than SQL sent to the server.
//   - GO counts only outside string literals ('…', a quote doubled inside), quoted
//     identifiers ("…" with "", […] with ]] on T-SQL and SQLite), line
//     comments and block comments, which nest on T-SQL and PostgreSQL
//     (/* /* */ */ is one comment) but not on SQLite. PostgreSQL adds
//     dollar-quoted strings ($$…$$, $tag$…$tag$) and E'…' strings with
//     backslash escapes, and has no […] identifiers; SQLite adds `…`.
//   - A batch starts on the line after its GO: the line break that ends the
//     GO line belongs to the separator, so a server numbers a batch's lines
//     as sqlcmd does. CRLF and LF both end lines.
//
// go-mssqldb's batch.Split, which ReadPast used before, breaks these rules:
// it rewrites a batch with a backslash at the end of a line inside a string
// (deleting bytes elsewhere: "… WHERE id = 12345" was sent as "… WHERE id =
// 345"), eats the "go" of "go_live_date", lets "[it's]" or "\"it's\"" open a
// string that swallows every later batch, ends a nested comment at its first
// "*/", and starts each batch with the line break of its GO line.
//
// sqlcmd's own Go port, github.com/microsoft/go-sqlcmd (pkg/sqlcmd, Batch),
// was tried first on these cases (at its commit a9e3ab5, by a test beside its
// own): it builds each batch in a buffer of its own, line by line, so a CRLF
// body comes back with LF and without its last line break; it reads $(name)
// as a scripting variable even inside a string ('a$(b' is a syntax error, a
// defined $(x) is replaced); it takes lines such as ":setvar x 1" and "exit"
// for its own commands and drops them from the batch; its block comments do
// not nest ("/* /* */ GO */" splits inside the comment); and it knows T-SQL
// only. It is also not served by the module proxy this project builds from.
// Its rules for GO itself are the ones followed here.
package sqlscript
