package faultproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/faultproxy"
)

// echoServer answers every line with itself, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip writes a line and reads it back within d; it returns the error
// of the first step that failed.
func roundTrip(c net.Conn, line string, d time.Duration) (string, error) {
	if err := c.SetDeadline(time.Now().Add(d)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	return got, err
}

func dial(t *testing.T, p *faultproxy.Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err, "the proxy accepts connections in every mode")
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestPassCutRestore(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, "tcp", echoServer(t))
	c := dial(t, p)
	got, err := roundTrip(c, "hello", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "hello\n", got)

	p.Cut()
	_, err = roundTrip(c, "again", 5*time.Second)
	require.Error(t, err, "a cut closes the open connection")
	require.False(t, isTimeout(err), "a cut is seen at once, not as a timeout: %v", err)
	_, err = roundTrip(dial(t, p), "new", 5*time.Second)
	require.Error(t, err, "a cut refuses new connections")
	require.False(t, isTimeout(err), "a refused connection is seen at once: %v", err)

	p.Restore()
	got, err = roundTrip(dial(t, p), "back", 5*time.Second)
	require.NoError(t, err, "new connections work after Restore")
	require.Equal(t, "back\n", got)
}

func TestBlackholeHoldsBytesUntilRestore(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, "tcp", echoServer(t))
	open := dial(t, p)
	_, err := roundTrip(open, "warm", 5*time.Second)
	require.NoError(t, err)

	p.Blackhole()
	_, err = roundTrip(open, "lost?", 200*time.Millisecond)
	require.True(t, isTimeout(err), "a blackhole answers nothing on an open connection: %v", err)
	fresh := dial(t, p)
	_, err = roundTrip(fresh, "new", 200*time.Millisecond)
	require.True(t, isTimeout(err), "a blackhole answers nothing on a new connection: %v", err)

	p.Restore()
	// The bytes held during the blackhole arrive, then the new ones.
	require.NoError(t, open.SetDeadline(time.Now().Add(5*time.Second)))
	r := bufio.NewReader(open)
	got, err := r.ReadString('\n')
	require.NoError(t, err, "held bytes flow after Restore")
	require.Equal(t, "lost?\n", got)
	require.NoError(t, fresh.SetDeadline(time.Now().Add(5*time.Second)))
	got, err = bufio.NewReader(fresh).ReadString('\n')
	require.NoError(t, err, "a connection made during the blackhole works after Restore")
	require.Equal(t, "new\n", got)
}

func TestCloseEndsEverything(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, "tcp", echoServer(t))
	c := dial(t, p)
	p.Blackhole()
	p.Close()
	p.Close()
	_, err := roundTrip(c, "x", 5*time.Second)
	require.Error(t, err)
	_, err = net.Dial("tcp", p.Addr())
	require.Error(t, err, "a closed proxy listens no more")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
