package queue

import "fmt"

// QueueNotEmpty is the refusal of DeleteQueue for a queue that holds tasks,
// the same sentence on every dialect: unfinished ones (pending or running),
// or else finished ones still in the history, which keep the queue listed
// with their counts until retention removes them.
func QueueNotEmpty(name string, unfinished bool) error {
	if unfinished {
		return fmt.Errorf("queue %s still has pending or running tasks: cancel them or let them finish, then delete it: %w", name, ErrInvalidState)
	}
	return fmt.Errorf("queue %s still has finished tasks in its history: it can be deleted once retention has removed them (--task-retention): %w", name, ErrInvalidState)
}

// QueueUnknown is DeleteQueue's (and the operations') answer for a name no
// queue has.
func QueueUnknown(name string) error {
	return fmt.Errorf("there is no queue %s: %w", name, ErrNotFound)
}
