package storetest

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// envServeS3 makes a test binary started by StartS3Process serve S3
// instead of running tests.
const envServeS3 = "VERTEBRAE_TEST_SERVE_S3"

// ServeS3IfChild turns this process into the S3 server of StartS3Process
// when it was started as one, and never returns then. Call it first in the
// TestMain of a package that uses StartS3Process.
func ServeS3IfChild() {
	bucket := os.Getenv(envServeS3)
	if bucket == "" {
		return
	}
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		fmt.Fprintln(os.Stderr, "create bucket:", err)
		os.Exit(1)
	}
	faker := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	os.Stdout.Sync()
	// The parent closes our stdin (or dies): then stop.
	go func() {
		buf := make([]byte, 1)
		os.Stdin.Read(buf)
		os.Exit(0)
	}()
	http.Serve(ln, faker.Server())
	os.Exit(1)
}

// S3Process is an S3-compatible server (gofakes3, in memory) running in a
// child process on 127.0.0.1, so that a test can stop it with SIGSTOP: a
// stalled server, whose kernel still accepts connections and buffers
// requests that nobody answers.
type S3Process struct {
	// URI is a store URI on an empty bucket of the server (with the query
	// parameters s3blob needs), to which a test may add its own.
	URI string
	// Endpoint is the server's http://127.0.0.1:PORT.
	Endpoint string
	cmd      *exec.Cmd
	t        testing.TB
}

// StartS3Process starts the server from this test binary (whose TestMain
// calls ServeS3IfChild) and stops it when the test ends. Like FakeS3 it
// sets fake credentials with t.Setenv, so the test must not be parallel.
func StartS3Process(t testing.TB) *S3Process {
	t.Helper()
	const bucket = "vertebrae-stall"
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envServeS3+"="+bucket)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the S3 server process: %v", err)
	}
	p := &S3Process{cmd: cmd, t: t}
	t.Cleanup(func() {
		p.resume()
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case p.Endpoint = <-line:
	case <-time.After(30 * time.Second):
		t.Fatal("the S3 server process did not start within 30 s")
	}
	if !strings.HasPrefix(p.Endpoint, "http://127.0.0.1:") {
		t.Fatalf("the S3 server process printed %q, not its address", p.Endpoint)
	}
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		t.Setenv("AWS_ACCESS_KEY_ID", "fake-access-key")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-key")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	q := url.Values{}
	q.Set("endpoint", p.Endpoint)
	q.Set("use_path_style", "true")
	q.Set("region", "us-east-1")
	p.URI = "s3://" + bucket + "?" + q.Encode()
	return p
}

// Pid is the server process's ID.
func (p *S3Process) Pid() int { return p.cmd.Process.Pid }
