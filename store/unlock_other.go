//go:build !unix

package store

import "os"

// unlock is a no-op where closing the file releases bbolt's lock.
func unlock(*os.File) {}
