package harness

import "os"

// watchCPU reads /proc/stat and /proc/self/stat.
func watchCPU() *cpuWatch {
	return &cpuWatch{regionWatch: regionWatch[cpuTicks]{read: func() (cpuTicks, error) {
		stat, err := os.ReadFile("/proc/stat")
		if err != nil {
			return cpuTicks{}, err
		}
		c, err := parseProcStat(string(stat))
		if err != nil {
			return c, err
		}
		self, err := os.ReadFile("/proc/self/stat")
		if err != nil {
			return c, err
		}
		c.self, err = parseSelfStat(string(self))
		return c, err
	}}}
}
