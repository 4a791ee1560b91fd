// Package proxyport is what runs first in a sandbox with a network
// (allowlist or open): golem's own executable, started by bubblewrap, opens
// the sandbox's proxy port (127.0.0.1:3128 on the sandbox's own loopback),
// hands the listening socket to golem, and becomes the agent's CLI
// (execve: same process, so the CLI's signals and exit status are its
// own). golem serves its proxy on that socket from outside: no process of
// golem's stays in the sandbox, and nothing copies between the CLI's
// connection and the proxy.
//
// A listening socket belongs to the network namespace it was made in, and
// only a process inside the sandbox's can make one there: an unprivileged
// golem may not enter it. The port listens before the CLI starts, so the
// CLI's first connection cannot come too early; golem accepts it once the
// socket has reached it.
//
// It runs in this package's init, which every binary that links package
// sandbox has (golem's, and the test binaries that run sandboxes), and
// takes the process over only when its first argument is Arg. Few
// packages are initialized before it (it imports errors, os, strconv and syscall alone):
// from bubblewrap's exec to the CLI's takes what the Go runtime's own
// start does.
package proxyport

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// Arg is the first argument that makes the executable open the port; the
// CLI (an absolute path) and its arguments follow it.
const Arg = "golem-sandbox-proxy-port"

// Port is the proxy's TCP port on the sandbox's loopback.
const Port = 3128

// The file descriptors golem gives the sandbox's command.
const (
	// HandFD is one end of a Unix socket pair whose other end golem
	// holds: the listening socket goes there (SCM_RIGHTS).
	HandFD = 5
	// ExeFD is golem's own executable, which bubblewrap runs as Exe: it
	// needs no path inside the sandbox, and a golem whose file was
	// replaced since it started still runs its own build.
	ExeFD = 6
)

// Exe is the path of the executable inside the sandbox.
const Exe = "/proc/self/fd/6"

func init() {
	if len(os.Args) < 3 || os.Args[1] != Arg {
		return
	}
	if err := open(); err != nil {
		os.Stderr.WriteString("golem's sandbox: could not open the proxy's port 127.0.0.1:" + strconv.Itoa(Port) + " inside: " + err.Error() + "\n")
		os.Exit(125)
	}
	syscall.Close(ExeFD)
	err := syscall.Exec(os.Args[2], os.Args[2:], os.Environ())
	os.Stderr.WriteString("golem's sandbox: cannot run " + os.Args[2] + ": " + err.Error() + "\n")
	os.Exit(127)
}

// open listens on 127.0.0.1:Port and sends the socket to golem over
// HandFD, which it then closes: the CLI inherits neither.
func open() error {
	defer syscall.Close(HandFD)
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return step("socket", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: Port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return step("bind", err)
	}
	if err := syscall.Listen(fd, syscall.SOMAXCONN); err != nil {
		return step("listen", err)
	}
	return step("hand it to golem", syscall.Sendmsg(HandFD, []byte{0}, syscall.UnixRights(fd), nil, 0))
}

// step names the step of open that failed.
func step(name string, err error) error {
	if err == nil {
		return nil
	}
	return errors.New(name + ": " + err.Error())
}
