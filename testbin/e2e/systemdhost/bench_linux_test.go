package systemdhost

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/systemdvm"
)

// benchRounds is how many elections guest/bench.sh starts and stops.
const benchRounds = 10

// BenchmarkSystemdVM prints one table of indicative figures from the systemd
// VM (guest/bench.sh): an election started as a plain root service, whose
// runs take the delegated scope, to its worker's first instruction, and its
// teardown on SIGTERM. Software emulation makes every figure several times
// slower than hardware: compare them with later runs of this table, not with
// the development host's.
func BenchmarkSystemdVM(b *testing.B) {
	require.Equal(b, 0, os.Geteuid(), "BenchmarkSystemdVM boots a VM: run it as root")
	require.NoError(b, systemdvm.CheckTools())
	ctx := context.Background()
	img, err := systemdvm.EnsureImage(ctx, systemdvm.Bookworm(), b.Logf)
	require.NoError(b, err)
	payload := b.TempDir()
	buildBinaries(b, filepath.Join(payload, "bin"))
	copyDir(b, filepath.Join(repoRoot(b), "testbin/e2e/systemdhost/guest"), filepath.Join(payload, "guest"))
	run := fmt.Sprintf("#!/bin/bash\nexec \"$1/guest/bench.sh\" \"$1\" \"$2\" %d\n", benchRounds)
	require.NoError(b, os.WriteFile(filepath.Join(payload, "run.sh"), []byte(run), 0o755))
	boot, err := img.Run(ctx, payload, b.TempDir(), 5*time.Minute)
	require.NoError(b, err)
	rounds := readBenchRounds(b, filepath.Join(boot.Results, "bench.txt"))
	require.NotEmpty(b, rounds, "bench.sh recorded no round; run.out:\n%s", systemdvm.Tail(filepath.Join(boot.Results, "run.out"), 30))
	fmt.Printf("\nSystemd VM (Debian 12, qemu TCG, 2 vCPUs; indicative only), %d rounds:\n", len(rounds))
	fmt.Printf("%-66s %10s %10s\n", "measurement", "p50", "max")
	for i, what := range []string{
		"election as a plain root service: systemd-run -> worker started",
		"SIGTERM -> supervisor exit (tree proven gone, released)",
		"  of which containment (terminal line's duration_ms)",
	} {
		col := make([]float64, len(rounds))
		for j, r := range rounds {
			col[j] = r[i]
		}
		slices.Sort(col)
		fmt.Printf("%-66s %8.1fms %8.1fms\n", what, col[len(col)/2], col[len(col)-1])
	}
}

// readBenchRounds reads bench.sh's lines (start ns, teardown ns, containment
// ms) as milliseconds.
func readBenchRounds(b *testing.B, path string) [][3]float64 {
	f, err := os.Open(path)
	require.NoError(b, err)
	defer f.Close()
	var rounds [][3]float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		require.Len(b, fields, 3, "bench.txt line %q", sc.Text())
		var r [3]float64
		for i, scale := range []float64{1e6, 1e6, 1} {
			v, err := strconv.ParseFloat(fields[i], 64)
			require.NoError(b, err, "bench.txt line %q", sc.Text())
			r[i] = v / scale
		}
		rounds = append(rounds, r)
	}
	require.NoError(b, sc.Err())
	return rounds
}
