package receipt_test

import (
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/receipt"
)

func ExampleDecode() {
	r, err := receipt.Decode([]byte(`{
  "protocol": 1,
  "minion_id": "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
  "request_id": "0f8fad5b-d9cb-469f-a165-70867728950e",
  "jid": "20261129154606051411",
  "profile": "configure",
  "state_digest": "",
  "status": "succeeded",
  "passed": 60,
  "total": 60
}`))
	fmt.Println(r.Status, r.Passed, r.Total, err)

	_, err = receipt.Decode([]byte(`{"protocol": 1, "comment": "extra"}`))
	var ie *receipt.InvalidReceiptError
	fmt.Println(errors.As(err, &ie), ie.Reason)
	// Output:
	// succeeded 60 60 <nil>
	// true unknown_key
}

func ExampleReceipt_Encode() {
	r := receipt.Receipt{
		Protocol: 1, MinionID: "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
		RequestID: "0f8fad5b-d9cb-469f-a165-70867728950e", JID: "20261129154606051411",
		Profile: receipt.ProfileProduction, Status: receipt.StatusFailed, Passed: 2, Total: 3,
	}
	b, err := r.Encode()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(b))
	// Output:
	// {"jid":"20261129154606051411","minion_id":"client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b","passed":2,"profile":"production","protocol":1,"request_id":"0f8fad5b-d9cb-469f-a165-70867728950e","state_digest":"","status":"failed","total":3}
}

func ExampleReduce() {
	ret := map[string]any{
		"test_|-ok_|-ok_|-succeed_without_changes":     map[string]any{"result": true, "comment": "Success!"},
		"test_|-bad_|-bad_|-fail_without_changes":      map[string]any{"result": false, "comment": "Failure!"},
		"file_|-/etc/x_|-/etc/x_|-managed (test=True)": map[string]any{"result": nil},
	}
	fmt.Printf("%+v\n", receipt.Reduce(ret))
	fmt.Printf("%+v\n", receipt.Reduce([]any{"Rendering SLS 'base:x' failed"}))
	fmt.Printf("%+v\n", receipt.Reduce(map[string]any{}))
	// Output:
	// {Status:failed Passed:1 Total:3}
	// {Status:unknown Passed:0 Total:0}
	// {Status:unknown Passed:0 Total:0}
}

func ExampleCanonicalJSON() {
	v := map[string]any{"b": []any{1e21, 1e-7, 0.1, 100.0}, "a": "é\n", "\U0001F600": true, "\uffff": nil}
	c, _ := receipt.CanonicalJSON(v)
	fmt.Println(string(c))
	d := receipt.Digest([]byte("{}"))
	fmt.Println(d)
	// Output:
	// {"a":"é\n","b":[1e+21,1e-7,0.1,100],"😀":true,"￿":null}
	// 44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a
}

func ExampleBinding_Check() {
	r, _ := receipt.Decode([]byte(`{"protocol":1,"minion_id":"client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b",` +
		`"request_id":"0f8fad5b-d9cb-469f-a165-70867728950e","jid":"20261129154606051411","profile":"configure",` +
		`"state_digest":"","status":"succeeded","passed":3,"total":3}`))
	claim := r.Binding()
	fmt.Println(claim.Check(r))
	claim.JID = "20261129154606051412"
	var ie *receipt.InvalidReceiptError
	err := claim.Check(r)
	fmt.Println(errors.Is(err, receipt.ErrInvalidReceipt), errors.As(err, &ie), ie.Reason, ie.Field)
	// Output:
	// <nil>
	// true true binding jid
}

func ExampleParseProfile() {
	for _, s := range []string{"configure", "production", "volume_resize", "credentials", "custom", "Configure"} {
		p, err := receipt.ParseProfile(s)
		fmt.Println(p, p.Fixed(), errors.Is(err, receipt.ErrUnknownProfile))
	}
	fmt.Println(receipt.ProfileVolumeResize.Fixed(), receipt.ProfileCredentials.Valid())
	// Output:
	// configure true false
	// production true false
	// volume_resize true false
	// credentials true false
	// custom false false
	//  false true
	// true true
}

func ExampleMinionModule() {
	var m receipt.MinionFiles = receipt.MinionModule()
	fmt.Println(m.Name, m.SaltPath, len(m.SHA256))
	// Output:
	// oduflow_job.py salt://_modules/oduflow_job.py 64
}

func ExampleReduce_summary() {
	var s receipt.Summary = receipt.Reduce(map[string]any{
		"file_|-motd_|-/etc/motd_|-managed": map[string]any{"result": true},
		"pkg_|-nginx_|-nginx_|-installed":   map[string]any{"result": false},
	})
	fmt.Println(s.Status, s.Passed, s.Total, s.Status.Terminal())
	// Output:
	// failed 1 2 true
}

// A fenced receipt: the minion refused a publication whose fence token was not above its
// high-water mark (or oduflow_job.fence reached it first). Nothing ran; the receipt is terminal.
func ExampleReceipt_Fenced() {
	r, err := receipt.Decode([]byte(`{"protocol":1,"minion_id":"client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
"request_id":"0f8fad5b-d9cb-469f-a165-70867728950e","jid":"20261129154606051411","profile":"configure",
"state_digest":"","status":"failed","passed":0,"total":0,"code":"fenced"}`))
	fmt.Println(r.Status, r.Passed, r.Total, r.Fenced(), err)

	// failed 0 of 0 is only ever a fenced receipt
	_, err = receipt.Decode([]byte(`{"protocol":1,"minion_id":"client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
"request_id":"0f8fad5b-d9cb-469f-a165-70867728950e","jid":"20261129154606051411","profile":"configure",
"state_digest":"","status":"failed","passed":0,"total":0}`))
	var ie *receipt.InvalidReceiptError
	fmt.Println(errors.As(err, &ie), ie.Reason)
	// Output:
	// failed 0 0 true <nil>
	// true counts
}
