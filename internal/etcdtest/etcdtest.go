// Package etcdtest runs etcd inside a test: one member or a cluster of
// several, on loopback ports, its data in the test's temporary folder and
// never fsynced.
package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

// Cluster is a running embedded etcd.
type Cluster struct {
	// Endpoints are the members' client addresses, host:port.
	Endpoints []string
	// With StartTLS: the CA of the members' certificates, and a client
	// certificate and key it signed, which the members require.
	CAFile, CertFile, KeyFile string

	mu      sync.Mutex // guards members
	members []*embed.Etcd
	cfgs    []*embed.Config
}

// URL is the store: value that reaches the cluster with prefix.
func (c *Cluster) URL(prefix string) string {
	scheme := "etcd://"
	if c.CAFile != "" {
		scheme = "etcds://"
	}
	return scheme + strings.Join(c.Endpoints, ",") + "/" + prefix
}

// Start runs an etcd cluster of n members for the test, stopped when it
// ends, and returns once it has a leader.
func Start(t testing.TB, n int) *Cluster { return start(t, n, false) }

// StartTLS runs one member that clients reach over TLS with a client
// certificate (see Cluster's CAFile, CertFile and KeyFile).
func StartTLS(t testing.TB) *Cluster { return start(t, 1, true) }

func start(t testing.TB, n int, secure bool) *Cluster {
	t.Helper()
	c := &Cluster{}
	var tlsInfo transport.TLSInfo
	if secure {
		tlsInfo, c.CAFile, c.CertFile, c.KeyFile = certificates(t)
	}
	ports := freePorts(t, 2*n)
	var initial []string
	cfgs := make([]*embed.Config, n)
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprint("m", i)
		cfg.Dir = t.TempDir()
		cfg.UnsafeNoFsync = true
		cfg.LogLevel = "error"
		cfg.LogOutputs = []string{"/dev/null"}
		cfg.TickMs, cfg.ElectionMs = 10, 100 // a leader within a second, under load too
		client := url.URL{Scheme: "http", Host: fmt.Sprint("127.0.0.1:", ports[2*i])}
		if secure {
			client.Scheme = "https"
			cfg.ClientTLSInfo = tlsInfo
		}
		peer := url.URL{Scheme: "http", Host: fmt.Sprint("127.0.0.1:", ports[2*i+1])}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		initial = append(initial, cfg.Name+"="+peer.String())
		c.Endpoints = append(c.Endpoints, client.Host)
		cfgs[i] = cfg
	}
	// Members of a new cluster wait for each other: start them together.
	var wg sync.WaitGroup
	errs := make([]error, n)
	c.members = make([]*embed.Etcd, n)
	for i, cfg := range cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "golem-test"
		wg.Go(func() { c.members[i], errs[i] = embed.StartEtcd(cfg) })
	}
	wg.Wait()
	c.cfgs = cfgs
	t.Cleanup(c.stop)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("etcdtest: start member %d: %v", i, err)
		}
	}
	for i, m := range c.members {
		select {
		case <-m.Server.ReadyNotify():
		case err := <-m.Err():
			t.Fatalf("etcdtest: member %d: %v", i, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("etcdtest: member %d not ready after 30 s", i)
		}
	}
	return c
}

func (c *Cluster) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.members {
		if m != nil {
			m.Close()
			c.members[i] = nil
		}
	}
}

// Stop stops member i, as a machine lost would; Restart brings it back.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.members[i]; m != nil {
		m.Close()
		c.members[i] = nil
	}
}

// Restart starts member i again, on its data and addresses, and returns
// once it serves (which needs a quorum of the cluster up).
func (c *Cluster) Restart(t testing.TB, i int) {
	t.Helper()
	cfg := c.cfgs[i]
	cfg.ClusterState = embed.ClusterStateFlagExisting
	m, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("etcdtest: restart member %d: %v", i, err)
	}
	c.mu.Lock()
	c.members[i] = m
	c.mu.Unlock()
	select {
	case <-m.Server.ReadyNotify():
	case err := <-m.Err():
		t.Fatalf("etcdtest: member %d: %v", i, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("etcdtest: member %d not ready 30 s after its restart", i)
	}
}

// freePorts returns n loopback ports free at the time of asking.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	ls := make([]net.Listener, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("etcdtest: free port: %v", err)
		}
		ls[i], ports[i] = l, l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// certificates writes a CA, a server certificate for 127.0.0.1 and a
// client certificate into a temporary folder.
func certificates(t testing.TB) (server transport.TLSInfo, ca, cert, key string) {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "golem test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	ca = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return writePEM(t, dir, name+".pem", "CERTIFICATE", der), writePEM(t, dir, name+"-key.pem", "EC PRIVATE KEY", kder)
	}
	serverCert, serverKey := issue("server", 2, x509.ExtKeyUsageServerAuth)
	cert, key = issue("client", 3, x509.ExtKeyUsageClientAuth)
	server = transport.TLSInfo{CertFile: serverCert, KeyFile: serverKey, TrustedCAFile: ca, ClientCertAuth: true}
	return server, ca, cert, key
}

func writePEM(t testing.TB, dir, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
