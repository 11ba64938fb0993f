"""Fixtures for the traces tests: small trace files written into each test's own tmp_path."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pytest

AZURE_2023 = (
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2023-11-16 18:15:46.6805900,374,44\n"
    "2023-11-16 18:15:50.9951690,396,109\n"
    "2023-11-16 18:15:51.2224670,879,55\n"
    "2023-11-16 18:15:51.3910170,91,16\n"
)
AZURE_2024 = (
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2024-05-10 00:00:00.009930+00:00,2162,5\n"
    "2024-05-10 00:00:01+00:00,100,20\n"
    "2024-05-10 02:00:02.5+02:00,300,30\n"
)
BURSTGPT_V1 = (
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5,ChatGPT,472,18,490,Conversation log\n"
    "45,ChatGPT,1087,0,1087,Conversation log\n"
    "118,GPT-4,417,276,693,Conversation log\n"
    "125,ChatGPT,1360,0,1360,API log\n"
    "130,GPT-4,80,20,100,API log\n"
)
BURSTGPT_V2 = (
    "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "19440110.0,1722ac82-0a46-4bf0-aa08-89794e7a2b3f,43,GPT-4,906,446,1352,Conversation log\n"
    "19440161.0,d5983bf9-4b48-497b-892b-a58995247443,2,ChatGPT,36,29,65,Conversation log\n"
    "19440192.0,1722ac82-0a46-4bf0-aa08-89794e7a2b3f,8,GPT-4,1779,123,1902,Conversation log\n"
    "19440254.0,,3,ChatGPT,935,178,1113,API log\n"
)
MOONCAKE = (
    '{"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [0, 1, 2]}\n'
    '{"timestamp": 2000, "input_length": 1024, "output_length": 12, "hash_ids": [0, 3]}\n'
    '{"timestamp": 2500, "input_length": 512, "output_length": 7, "hash_ids": []}\n'
)
VIDUR = "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,591,140\n0.125,547,248\n1.5,3000,12\n"

FIXTURES = {
    "azure": ("azure.csv", AZURE_2023),
    "azure2024": ("azure2024.csv", AZURE_2024),
    "burstgpt": ("burst.csv", BURSTGPT_V1),
    "burstgpt2": ("burst2.csv", BURSTGPT_V2),
    "mooncake": ("mooncake.jsonl", MOONCAKE),
    "vidur": ("vidur.csv", VIDUR),
}


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    """write(name, text, gz=False) -> path of a new file under this test's tmp_path."""

    def _write(name: str, text: str | bytes, *, gz: bool = False) -> Path:
        path = tmp_path / name
        data = text.encode() if isinstance(text, str) else text
        path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
        return path

    return _write
