package main

import (
	"context"
	"fmt"

	"readpast/internal/agentimport"
	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/queue/open"
)

// importActor is who the audit log names for the jobs import-agent creates.
const importActor = "import-agent"

// jobsInStore opens the ReadPast store at dsn ("" is the SQLite file
// readpast.db, as for serve), migrated as serve migrates it, and returns what
// creates the imported jobs there, with the store's closing.
func jobsInStore(ctx context.Context, dsn string) (agentimport.JobCreator, func(), error) {
	s, err := open.Store(ctx, dsn, queue.Options{})
	if err != nil {
		return nil, nil, err
	}
	if err := s.Migrate(ctx); err != nil {
		_ = s.Close()
		return nil, nil, fmt.Errorf("migrating the ReadPast store the jobs go to: %w", err)
	}
	return storeJobs{ops: ops.New(ops.Deps{Store: s})}, func() { _ = s.Close() }, nil
}

// storeJobs creates each imported job paused, whatever its document says
// (ops.CreateJobFromJSON), so it does not run beside the Agent it came from.
type storeJobs struct{ ops *ops.Ops }

func (c storeJobs) CreateJob(ctx context.Context, doc []byte) error {
	_, _, err := c.ops.CreateJobFromJSON(ctx, importActor, doc, false)
	return err
}
