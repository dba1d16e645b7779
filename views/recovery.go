package views

// RecoveryView is the cluster page's health and recovery panel (R3–R5).
type RecoveryView struct {
	ClusterID     string
	Mode          string // restart or off
	MaxAttempts   string // form values
	Cooldown      string
	Problems      map[string]string
	CanEdit       bool
	CanRecoverNow bool
	Episode       string // when the open unhealthy episode started; "" = healthy
	Attempts      string // "1 of 3"
	LastAttempt   string
	NextAttempt   string // cooldown: no automatic attempt before
	Outcomes      []OutcomeView
	Requested     bool
	Exhausted     bool
	Paused        string // health damping paused automatic repair at this time; "" = not paused (X14)
}

// OutcomeView is one machine's outcome of the last attempt.
type OutcomeView struct {
	Node, Outcome, Message string
}
