package grader

import "testing"

const (
	scanCRC = `		if crc32.Checksum(data[off+4:end], table) != c {
			if end == len(data) {
				return off, nil // the last record, garbled
			}
			return off, fmt.Errorf("%w: offset %d, %d bytes after it", errDamaged, off, len(data)-end)
		}
`
	scanShortHeader = `		if off+8 > len(data) {
			return off, nil // a torn header
		}
`
	scanShortRecord = `		if end > len(data) {
			return off, nil // cut short
		}
`
)

// TestTornTailBrokenVersions: each plausible wrong scan or Open fails the
// row it should, with the crash point or the flipped byte and the rule.
func TestTornTailBrokenVersions(t *testing.T) {
	sol := tornTailExercise.Solution
	checkBroken(t, "torn-tail", sol, []brokenCase{
		{"no CRC check", scanCRC, "\t\t_ = c\n", "the last byte of the last record flipped",
			`log byte 220 flipped: key k5 was acknowledged at operation 14 as "v5-xxxxxxxxx" but came back as "v5-agai;"`, "check the CRC of every record"},
		{"any CRC mismatch is an error", scanCRC, `		if crc32.Checksum(data[off+4:end], table) != c {
			return off, fmt.Errorf("%w: offset %d", errDamaged, off)
		}
`, "the last byte of the last record flipped", "log byte 220 flipped: Open failed: log: damaged record", "a garbled last record is a torn tail"},
		{"any CRC mismatch ends the log", scanCRC, `		if crc32.Checksum(data[off+4:end], table) != c {
			return off, nil
		}
`, "the last byte of record 7 of 12", "log byte 120 flipped: Open succeeded; 5 of the 5 Puts after it are gone", "dropping them silently loses acknowledged writes"},
		{"no truncation of the tail", truncateTail, "", "power cut after each operation",
			`reopened, Put("after") acknowledged, reopened again: key after is gone`, "Open must truncate the file at the end of the last good record"},
		{"a short header is read anyway", scanShortHeader, "", "power cut after each operation",
			"Open failed: panic: index out of range", "a power cut in the middle of an append leaves a torn tail"},
		{"a record cut short is an error", scanShortRecord, "\t\tif end > len(data) {\n\t\t\treturn off, errDamaged\n\t\t}\n", "power cut after each operation",
			"Open failed: log: damaged record", "a power cut in the middle of an append leaves a torn tail"},
	})
}

// TestTornTailStubFailsEveryCheck: the starting code passes the workload
// and the empty disk, and nothing that needs the tail handled.
func TestTornTailStubFailsEveryCheck(t *testing.T) {
	r := mustRun(t, "torn-tail", tornTailExercise.Stub)
	for _, c := range r.Cases[3:] {
		if c.Pass {
			t.Errorf("stub passes %q: %s", c.Input, c.Got)
		}
	}
}
