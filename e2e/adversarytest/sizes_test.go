package adversarytest

import "os"

// fullEnv names an environment variable: set to 1, every attack makes as
// many objects as issue 49 names (issueCounts), not the suite's
// (suiteCounts). Each object is the issue's size either way.
const fullEnv = "RINGFIRE_ADVERSARY_FULL"

// counts are how many objects the attacks make.
type counts struct {
	configMaps    int // forged ConfigMaps of 60,000 keys
	others        int // forged Services, PVCs and pods, each
	annotatedJobs int // Jobs of 200 KiB of annotations
	barePods      int // bare pods of 1 MiB
}

// issueCounts are issue 49's. The API server, not ringfire, makes them
// slow here: on this project's 2-core machine one ConfigMap of 60,000 keys
// took it 1.4-2.2 s to create (each key is decoded and checked), 250 of them
// over 6 minutes, and 100 pods of 1 MiB 2 min 30 s; the 1,000 Jobs, with
// their PodGroups, over 8 minutes.
var issueCounts = counts{configMaps: 250, others: 20, annotatedJobs: 1000, barePods: 100}

// suiteCounts are the suite's, a tenth to a twenty-fifth of the issue's,
// so that both worlds fit in the main lane's six minutes: every attack's
// objects are as large, so each still shows what one object costs a
// replica, and RINGFIRE_ADVERSARY_FULL=1 shows what the issue's numbers do.
var suiteCounts = counts{configMaps: 10, others: 5, annotatedJobs: 100, barePods: 10}

// attackCounts are the counts of this run.
func attackCounts() counts {
	if os.Getenv(fullEnv) == "1" {
		return issueCounts
	}
	return suiteCounts
}
