// Package prom exports a Dispatcher's events as Prometheus metrics: a Collector whose Hooks feed
// client_golang counters, gauges and histograms.
//
//	m := prom.New()
//	registry.MustRegister(m)
//	d, err := oduflow.New(client, events, oduflow.WithHooks(m.Hooks()))
//
// It is a nested module (its own go.mod) so that the oduflow module's dependency graph does not gain
// client_golang. The metrics (namespace "oduflow" unless WithNamespace):
//
//	oduflow_starts_total{profile,created}                        Start calls; created="true" wrote the claim
//	oduflow_publications_total{function,result}                  publications; result "ok" or an error code
//	oduflow_outcomes_total{profile,status,error_code}            final outcomes committed here
//	oduflow_operation_duration_seconds{op}                       histogram of Hooks.Observe's ops
//	oduflow_requests_in_flight                                   requests created by this process, no outcome yet
//	oduflow_adoptions_total                                      adoptions that reached a final commit
//	oduflow_unverified_events_total{reason}                      returns that are never evidence
//	oduflow_bus_gaps_total{reason}                               gaps of the event-bus subscription
//
// Labels are the bounded enumerations the Hooks document (profiles, statuses, error codes, function
// names, reasons); request ids and JIDs are never labels. In flight counts the requests this process
// created and has not yet seen a final outcome for: a request drained by Close and adopted by another
// replica leaves it only when its outcome is committed here (so a replica's gauge may keep such a request
// until it restarts); sum it across replicas with that in mind.
package prom
