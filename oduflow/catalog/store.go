package catalog

import "context"

// Store is the catalog API used by the dispatcher's custom executions and by administrative code; a
// catalog on another backend (etcd, SQL) implements it. It returns full records, source included: an
// embedding service that shows records to less trusted users filters them itself (by company, without
// source or payload).
type Store interface {
	// Definition returns one definition (ErrNotFound).
	Definition(ctx context.Context, id string) (Definition, error)
	// Definitions returns every definition, ordered by creation time then id.
	Definitions(ctx context.Context) ([]Definition, error)
	// Assignment returns the assignment of a definition to a server (ErrNotFound). A stored assignment
	// whose company is not its definition's (Assignment.CheckDefinition), or whose definition is missing, is
	// ErrCorrupt; Assignments checks every record the same way.
	Assignment(ctx context.Context, definitionID, minionID string) (Assignment, error)
	// Assignments returns the assignments of one server, or of every server when minionID is "".
	Assignments(ctx context.Context, minionID string) ([]Assignment, error)
	// Execution returns the execution whose id is requestID. A request id recorded as a pointer gives an
	// error matching ErrInvalid that names the execution it points to; ErrNotFound when unknown.
	Execution(ctx context.Context, requestID string) (Execution, error)
	// Resolve returns the execution for a request id: its own, or the one it points to (pointer true).
	Resolve(ctx context.Context, requestID string) (exec Execution, pointer bool, err error)
	// Executions returns every execution on one server in creation order (ties by request id).
	Executions(ctx context.Context, minionID string) ([]Execution, error)
	// CreateDefinition stores a new definition at revision 1 with a new id. The source must compile. One
	// definition per company and name: a name in use gives ErrExists.
	CreateDefinition(ctx context.Context, company, name string, source []byte) (Definition, error)
	// GetOrCreateDefinition returns the company's definition of that name, or creates it (created true);
	// atomic across goroutines and processes.
	GetOrCreateDefinition(ctx context.Context, company, name string, source []byte) (d Definition, created bool, err error)
	// SaveSource replaces the source of a definition. Changed source (any byte) increments the revision
	// and recomputes the digest; identical source changes nothing. The source must compile.
	SaveSource(ctx context.Context, id string, source []byte) (Definition, error)
	// Rename changes the display name; the revision stays. The new name must be free within the company.
	Rename(ctx context.Context, id, name string) (Definition, error)
	// Assign assigns a definition to a server of its own company (Definition.Company): any other company
	// gives ErrInvalid (see Definition.AssignableTo). Assigning again is a no-op; an existing assignment for another
	// company gives ErrExists.
	Assign(ctx context.Context, definitionID, minionID, company string) (Assignment, error)
	// Unassign removes an assignment, a corrupt or crossed one too. Executions stay intact.
	Unassign(ctx context.Context, definitionID, minionID string) error
	// LockServer serializes custom starts on one server (across processes). Call the returned function
	// to release it.
	LockServer(ctx context.Context, minionID string) (unlock func() error, err error)
	// CreateExecution stores a frozen snapshot (outcome and pointers are ignored: it starts queued).
	// Creating the identical snapshot again returns the stored one; a request id already used for
	// anything else gives ErrExists.
	CreateExecution(ctx context.Context, e Execution) (Execution, error)
	// AddPointer records pointerRequestID as pointing to the execution executionID. Idempotent for the
	// same pair; a request id already used otherwise gives ErrExists.
	AddPointer(ctx context.Context, executionID, pointerRequestID, reason string) (Execution, error)
	// RecordOutcome stores the sanitized outcome of an execution. A terminal outcome confirmed by a
	// minion receipt or a master record is final: a different one gives ErrExists.
	RecordOutcome(ctx context.Context, requestID string, o Outcome) (Execution, error)
}
