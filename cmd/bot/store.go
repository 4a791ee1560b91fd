package main

import (
	"fmt"

	"github.com/golem-chat/golem/config"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
)

// openStore opens what store: names: etcd for an etcd:// or etcds:// URL
// (with store_tls:), otherwise the bbolt file. Its errors start "store:".
func openStore(cfg config.Config) (store.Store, error) {
	if !cfg.StoreIsEtcd() {
		return store.Open(cfg.Path(cfg.Store))
	}
	ec, secure, err := etcdstore.ParseURL(cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if secure {
		t := cfg.StoreTLS
		if ec.TLS, err = etcdstore.TLSConfig(cfg.Path(t.CA), cfg.Path(t.Cert), cfg.Path(t.Key)); err != nil {
			return nil, err
		}
	}
	return etcdstore.Open(ec)
}
