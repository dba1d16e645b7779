package views

// GPUView is the Overview's GPU section (X15): the whole
// cluster's utilization over the last hour and day, and per machine its
// utilization and memory as sparklines with temperature, power and the
// errors seen.
type GPUView struct {
	HourUtil, DayUtil Spark
	HourNow, DayMean  string // "62 % now", "mean 48 % over 24 h"
	Machines          []GPUMachineView
	Empty             string // why there is nothing to chart yet; "" = charts
	Stall             string // an open stall, as the alert said it
	MetricsURL        string // the same series as JSON
}

// GPUMachineView is one machine's row.
type GPUMachineView struct {
	Node    string
	GPUs    string // "8 GPUs"
	Util    Spark
	UtilNow string // "87 %" or "–"
	Mem     Spark
	MemNow  string // "61 / 80 GB"
	Temp    string // "64 °C" (the hottest GPU)
	Power   string // "2.4 kW" (all GPUs)
	Errors  string // "none", "XID 79 …", "2 uncorrectable ECC"
	Bad     bool   // errors worth a colour
	Note    string // "no nvidia-smi: …", "no report for 5 min"
}

// WatchView is the stall alert and the idle rule, with their form.
type WatchView struct {
	ClusterID                       string
	Summary                         string
	StallOn                         bool
	StallMinutes                    string
	Stall                           string // the open stall; "" = none
	IdleOn                          bool
	IdleBelow, IdleHours, IdleGrace string
	IdleAction                      string
	IdleState                       string // "Every GPU idle since …; stopped at … unless …"
	Problems                        map[string]string
}

// idleHoursValue is the launch form's idle hours, 2 until one is typed.
func idleHoursValue(v string) string {
	if v == "" {
		return "2"
	}
	return v
}
