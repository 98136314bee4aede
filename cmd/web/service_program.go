package main

import (
	"context"
	"errors"
	"sync"

	"github.com/kardianos/service"
)

// program is serve as a service manager runs it (kardianos/service's
// Interface; the Windows service control manager calls it): Start begins
// serving and returns at once, Stop asks serve to drain, as SIGTERM does, and
// waits until it has. When serve ends by itself (the store went away for
// good, the port is taken), exited hears its error, so the service can end
// with a failure the manager's recovery restarts.
type program struct {
	parent context.Context
	serve  func(ctx context.Context) error
	exited func(err error)

	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped chan struct{} // closed when serve has returned
	err     error         // serve's error, once stopped is closed
}

var _ service.Interface = (*program)(nil)

// Start implements service.Interface.
func (p *program) Start(service.Service) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped != nil {
		return errors.New("readpast is already running in this process: stop it before starting it again")
	}
	ctx, cancel := context.WithCancel(p.parent)
	p.cancel, p.stopped = cancel, make(chan struct{})
	go func() {
		err := p.serve(ctx)
		asked := ctx.Err() != nil
		p.err = err
		close(p.stopped)
		if !asked && p.exited != nil {
			p.exited(err) // not asked to stop: serve failed, or its parent ended
		}
	}()
	return nil
}

// Stop implements service.Interface: it returns once serve has drained its
// workers (within --grace) and closed its connections, with serve's error.
// Stopping twice, or a program never started, is no error.
func (p *program) Stop(service.Service) error {
	p.mu.Lock()
	cancel, stopped := p.cancel, p.stopped
	p.mu.Unlock()
	if stopped == nil {
		return nil
	}
	cancel()
	<-stopped
	return p.err
}
