// Package domain is Clusterdeck's vocabulary, free of any database: the
// cluster's and node's statuses, the events and the transition table
// (L8), every "can X now" decision (Lifecycle: terminate, stop, resume,
// retry install, recover now, add a worker, replace a machine, the GPU
// watch, verify again), lastError's kinds, stop reasons, money in integer
// micro-dollars and the price arithmetic (Q6, O7), offers and their track
// records as the picker shows them, stall and idle detection (X15),
// verification's verdicts and the one list of fatal Xids (X13), and the
// one rule for loopback and public hosts (X8, OP5).
//
// It imports the standard library, the node-spec parsers and the address
// registry only, never the store (TestVocabularyLayout); views speak it
// instead of models, and models re-declares every name in it
// (domain_aliases.go), so the store, the jobs and the web share one word
// for each thing. A page that offers a button and the use case that
// guards the action ask the same method here (TestNoLifecycleDecisionsOnRawFields).
package domain
