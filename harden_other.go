//go:build !linux

package main

// hardenProcess does nothing outside Linux.
func hardenProcess() error { return nil }

// dumpable is unknown outside Linux: reported as true.
func dumpable() (bool, error) { return true, nil }
