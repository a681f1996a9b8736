package profiles
import "github.com/oduflow/oduflow-go/receipt"
func receiptCanonical(h map[string]any) ([]byte, error) { return receipt.CanonicalJSON(h) }
