package views

// BudgetsForm is the billing page's budgets section (B5, X6): a row per
// environment with its monthly budget, spend and forecast, and each billed
// cluster's projected run-out. It answers htmx posts on its own.
type BudgetsForm struct {
	CSRF          string
	Month         string // YYYY-MM
	BalanceRunOut string // when the balance runs out at the current burn, or "—"
	Rows          []BudgetRow
	Clusters      []RunOutRow
}

// BudgetRow is one environment.
type BudgetRow struct {
	EnvID, Env string
	Amount     string // dollars as saved or typed; "" = no budget
	Set        bool   // a budget is saved
	Spend      string
	Burn       string // "$39.84/h"
	Percent    string // "52 %", "" without a budget
	Forecast   string // when the budget is reached at the current burn, or why not
	State      string // "Reached: clusters stopped at …", "80 % warned", ""
	Reached    bool
	Problems   map[string]string // field problems of this row's form
}

// fieldProblems are the row's problems keyed by the id of their field, for
// the summary's links (A4).
func (r BudgetRow) fieldProblems() map[string]string {
	out := make(map[string]string, len(r.Problems))
	for f, msg := range r.Problems {
		out["budget-"+f+"-"+r.EnvID] = msg
	}
	return out
}

// RunOutRow is a billed cluster's projected run-out (X6).
type RunOutRow struct {
	ClusterID, Cluster, Env string
	At                      string // "2026-11-30 14:02 UTC" or "—"
	By                      string // "budget of staging", "balance"
}
