// Command cmd builds labserver's release archives (`make dist`):
//
//	go run ./internal/dist/cmd -version 2026.12.02 [-out dist] [-targets linux/amd64,...]
//
// It prints each archive with its binary's size and writes SHA256SUMS
// beside them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"kvlab/internal/dist"
)

func main() {
	out := flag.String("out", "dist", "directory for the archives and SHA256SUMS (emptied first)")
	version := flag.String("version", "", "release name stamped into the binaries (required)")
	targets := flag.String("targets", "", "comma-separated OS/ARCH list (default: all six)")
	trimpath := flag.Bool("trimpath", true, "build with -trimpath (a release should)")
	flag.Parse()
	ts, err := dist.ParseTargets(*targets)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if _, err := dist.Build(context.Background(), dist.Options{
		Root: ".", Out: *out, Version: *version, Targets: ts, Trimpath: *trimpath, Log: os.Stdout,
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("archives and SHA256SUMS in %s/\n", *out)
}
