"""Data of the bundled demo (two zstd releases, hand names); built by kbtool.services.demo."""
