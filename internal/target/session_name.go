package target

import "context"

type sessionNameKey struct{}

// WithSessionName asks Run, called with the returned context, to mark the
// body's session with name while the body runs (PostgreSQL: a comment at the
// head of each batch, attempt_mark.go; SQL Server: CONTEXT_INFO; the reset at
// the body's end takes the mark away). The worker
// names it after the attempt (queue.AttemptSessionName), so that the node
// that reclaims the attempt's expired lease can end the session (SessionEnder)
// if its node froze or was cut off while the body ran.
func WithSessionName(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, sessionNameKey{}, name)
}

// sessionName is the name WithSessionName gave, or "".
func sessionName(ctx context.Context) string {
	name, _ := ctx.Value(sessionNameKey{}).(string)
	return name
}
