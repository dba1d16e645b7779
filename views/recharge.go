package views

// AutoRechargeForm is the auto-recharge settings (B4) as the billing page
// and GET /billing/auto-recharge show them.
type AutoRechargeForm struct {
	CSRF              string
	Enabled           bool
	Threshold, Amount string // dollars, as typed or saved
	CardSaved         bool
	TestMode          bool
	Max               string // the largest amount and threshold, like "$50,000.00" (MAX_TOP_UP_USD, B9)
	Paused            *ChargeBanner
	Problems          map[string]string
}

// ChargeBanner is a failed auto-recharge, shown on every page to owners
// and admins until they act on it.
type ChargeBanner struct {
	Headline, Text string
}
