"""The main jobs of the library, each a function of a typed, picklable request (`hiera_dspy.jobs.requests`) that
returns a typed result: judge, label, fill holes, compile a judge, plan a human sample. `hiera_dspy.api` is their
public face; every command of eval/ and optimize/ maps its flags onto a request and prints the result."""
