"""The specification data lancespec ships: the requirement catalogue (requirements.toml), the JSON Schema
of certify's report (certify-report.schema.json), findings about pylance (findings.md) and the generated
human-readable catalogue (README.md)."""
