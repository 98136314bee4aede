// Package queue holds the ReadPast task model, its state machine and the Store
// interface that every SQL dialect implements (sqlite, postgres, sqlserver
// subpackages). Driver types never leave the dialect packages; callers see only
// the types declared here.
//
// The claim rules (SPEC §4) in one place, so each dialect implements the same thing:
//
//   - A task is claimable when it is pending, available_at has passed, chain_wait
//     is false, its queue is not paused and under max_running, and its group has a
//     free slot. Claim order is priority, available_at, id.
//   - Group admission reads only the locked group row's running counter, never
//     other tasks' rows, so no uncommitted or skipped row can decide admission.
//   - chain_wait is recomputed with the chain row locked, by whoever changes the
//     chain (enqueue, finish, cancel, retry), so concurrent finishers of one stage
//     cannot both miss that the stage is complete.
//   - A queue's max_running is enforced by counting its running tasks while the
//     queue row is locked; queues without a cap never lock their row on claim.
package queue
