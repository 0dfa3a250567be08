"""The harness ``reference-plugin``: runner's reference client, registered from outside runner's tree.

Its profile is ``reference-plugin.yaml`` beside this module; it runs in runner's built-in ``reference`` image. Its
interpreter is a name of its own for runner's ``jsonl`` one, so the test sees a plugin's interpreter in use.
"""

from runner.harnesses.interpreters import jsonl
from runner.harnesses.package import HarnessPackage

HARNESS = HarnessPackage(interpreters={"reference-plugin-jsonl": jsonl})
