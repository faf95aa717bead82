// Package redisstate holds the shared limiter state a production deployment
// keeps in Redis: atomic Lua scripts that take the time as an argument
// (a sorted set per key for sliding logs, INCR + expiry per window for fixed
// windows, a hash per key for token buckets), and a minimal RESP client to
// run them. The tests replay ratesweep traces through the scripts and check
// them against the model decision by decision (docs/keys.md).
//
// The client is a few dozen lines of RESP2 over one TCP connection rather
// than github.com/redis/go-redis: the scripts need EVALSHA, SCRIPT LOAD and
// FLUSHDB only, and the module stays free of a dependency (and its
// transitive ones) that nothing else uses.
package redisstate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// Client is one connection to a Redis server. It is not safe for
// simultaneous use by several goroutines.
type Client struct {
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
}

// RedisError is an error reply from the server.
type RedisError struct{ Msg string }

func (e *RedisError) Error() string { return "redis: " + e.Msg }

// Dial connects to a Redis server at addr (host:port).
func Dial(addr string) (*Client, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("redisstate: %w", err)
	}
	return &Client{conn: conn, r: bufio.NewReader(conn), w: bufio.NewWriter(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Do sends one command and returns its reply: int64, string (bulk or
// simple), []any, nil (null) or a *RedisError.
func (c *Client) Do(args ...string) (any, error) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := c.w.Flush(); err != nil {
		return nil, fmt.Errorf("redisstate: %w", err)
	}
	v, err := c.read()
	if err != nil {
		return nil, err
	}
	if re, ok := v.(*RedisError); ok {
		return nil, re
	}
	return v, nil
}

func (c *Client) read() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("redisstate: %w", err)
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, errors.New("redisstate: malformed reply")
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return &RedisError{Msg: body}, nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return nil, fmt.Errorf("redisstate: %w", err)
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.read(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("redisstate: unknown reply type %q", line[0])
}
