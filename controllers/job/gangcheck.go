package job

import "github.com/ringfire/ringfire/controllers/job/plan"

// ReasonMinAvailableUnreachable is the reason, in status.state and in a
// Warning Event, of a Pending Job whose gang can never start
// (plan.GangProblem).
const ReasonMinAvailableUnreachable = plan.ReasonMinAvailableUnreachable
