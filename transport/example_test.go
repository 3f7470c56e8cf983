package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/tetherhq/tether/transport"
)

// This example runs a process that answers one line of input with two lines
// of output, and reads until its output ends.
func ExampleCommand() {
	ctx := context.Background()
	t := &transport.Command{
		Path: "/bin/sh",
		Args: []string{"-c", `read name; echo "{\"hello\":\"$name\"}"; echo '{"done":true}'`},
		// How long Close waits after closing stdin, and after SIGTERM.
		ExitGrace: time.Second,
		TermGrace: time.Second,
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	if err := conn.Write(ctx, []byte("world")); err != nil {
		log.Fatal(err)
	}
	for {
		line, err := conn.Read(ctx)
		if errors.Is(err, io.EOF) {
			break // the process ended cleanly
		}
		if err != nil {
			// An *transport.ExitError says how the process ended badly;
			// errors matching ndjson.ErrSkipped could be skipped instead.
			log.Fatal(err)
		}
		fmt.Println(string(line))
	}
	// Output:
	// {"hello":"world"}
	// {"done":true}
}

// This example plays both sides of a connection in process, as tests of an
// agent client do.
func ExampleMemory() {
	ctx := context.Background()
	m := transport.NewMemory()
	client, err := m.Connect(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// The fake agent answers each line it reads, until its input ends.
	agent := m.Agent()
	go func() {
		defer agent.Close()
		for {
			line, err := agent.Read(ctx)
			if err != nil {
				return
			}
			_ = agent.Write(ctx, append([]byte("echo: "), line...))
		}
	}()

	_ = client.Write(ctx, []byte(`{"ping":1}`))
	reply, _ := client.Read(ctx)
	fmt.Println(string(reply))
	_ = client.CloseWrite()
	_, err = client.Read(ctx)
	fmt.Println(err == io.EOF)
	// Output:
	// echo: {"ping":1}
	// true
}
