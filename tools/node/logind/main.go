// A stand-in for systemd-logind on the real node's own D-Bus system bus, as much of it as the kubelet's
// graceful node shutdown uses: the InhibitDelayMaxUSec property, Inhibit (a delay lock, kept by the
// kubelet until it has stopped the node's pods) and the PrepareForShutdown signal. SIGUSR1 announces a
// shutdown, SIGUSR2 cancels it (as `shutdown -c` does); nothing is ever shut down. Built by node.sh.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
)

const (
	path  = dbus.ObjectPath("/org/freedesktop/login1")
	iface = "org.freedesktop.login1.Manager"
)

type manager struct{}

// Inhibit hands the caller its end of a lock; the kubelet closes it when it is done.
func (manager) Inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	fmt.Fprintf(os.Stderr, "logind: %s takes a %s lock on %s: %s\n", who, mode, what, why)
	return dbus.UnixFD(f.Fd()), nil
}

func main() {
	conn, err := dbus.ConnectSystemBus()
	if err != nil {
		fail(err)
	}
	if err := conn.Export(manager{}, path, iface); err != nil {
		fail(err)
	}
	// Longer than any shutdownGracePeriod the tier sets: the kubelet never asks for a longer one.
	delay := uint64(60 * 1000 * 1000)
	if _, err := prop.Export(conn, path, prop.Map{iface: {"InhibitDelayMaxUSec": {Value: delay, Emit: prop.EmitFalse}}}); err != nil {
		fail(err)
	}
	reply, err := conn.RequestName("org.freedesktop.login1", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		fail(fmt.Errorf("name not taken: %v %v", reply, err))
	}
	fmt.Fprintln(os.Stderr, "logind: ready")
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	for s := range signals {
		switch s {
		case syscall.SIGUSR1, syscall.SIGUSR2:
			shuttingDown := s == syscall.SIGUSR1
			if err := conn.Emit(path, iface+".PrepareForShutdown", shuttingDown); err != nil {
				fail(err)
			}
			fmt.Fprintf(os.Stderr, "logind: PrepareForShutdown(%v)\n", shuttingDown)
		default:
			os.Exit(0)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "logind:", err)
	os.Exit(1)
}
