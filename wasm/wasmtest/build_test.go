package wasmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// built is the worker compiled once per test binary into a temporary
// directory, with the wasm_exec.js of the same toolchain beside it.
var built struct {
	once     sync.Once
	dir      string
	wasm     string
	wasmExec string
	err      error
	out      []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildWasm compiles ./wasm/worker with GOOS=js GOARCH=wasm exactly as
// `make wasm` does and returns the paths of yaegi.wasm and wasm_exec.js.
func buildWasm(t testing.TB) (wasm, wasmExec string) {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "kvlab-wasm-")
		if built.err != nil {
			return
		}
		built.wasm = filepath.Join(built.dir, "yaegi.wasm")
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		var goroot []byte
		goroot, built.err = exec.Command(goBin, "env", "GOROOT").Output()
		if built.err != nil {
			return
		}
		cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", built.wasm, "kvlab/wasm/worker")
		cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
		built.out, built.err = cmd.CombinedOutput()
		if built.err != nil {
			return
		}
		built.wasmExec = filepath.Join(built.dir, "wasm_exec.js")
		var b []byte
		b, built.err = os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "wasm_exec.js"))
		if built.err == nil {
			built.err = os.WriteFile(built.wasmExec, b, 0o644)
		}
	})
	if built.err != nil {
		t.Fatalf("building the worker wasm: %v\n%s", built.err, built.out)
	}
	return built.wasm, built.wasmExec
}
