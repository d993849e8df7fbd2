"""Media the model produces: Gemini inline image parts and Responses ``image_generation_call`` results
become ``llmroute.Media`` events, ``LLMResponse.media`` and a ``MediaPart`` in the assistant message
that goes back to the provider in the next turn (Gemini: with its thought signature)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import llmroute
from llmroute.providers import anthropic, bedrock, google, openai, openrouter
from llmroute.schema.mime import sniff, sniff_base64
from llmroute.testing import (
    Cassette,
    Chunking,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    event_order_problems,
)
from tests.helpers import CASSETTES, load, replay_generate, sse_cassette

GEMINI = google.configure(api_key="test-key").gemini("gemini-3-pro-image-preview")
GEMINI_URL = (
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-pro-image-preview:streamGenerateContent"
)


def _recorded_png() -> str:
    """A real PNG: the image opencode sent to Gemini in a recorded request (base64, as on the wire)."""
    body = json.loads(load("opencode/gemini/gemini-2-5-flash-image.yaml").interactions[0].request.body)
    return body["contents"][0]["parts"][1]["inlineData"]["data"]


PNG = _recorded_png()


# -- sniffing and the event ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "mime"),
    [
        (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "image/png"),
        (b"\xff\xd8\xff\xe0\0\x10JFIF", "image/jpeg"),
        (b"GIF89a\x01\0", "image/gif"),
        (b"RIFF\x24\x08\0\0WEBPVP8 ", "image/webp"),
        (b"RIFF\x24\x08\0\0WAVEfmt ", "audio/wav"),
        (b"%PDF-1.7\n", "application/pdf"),
        (b"ID3\x04\0\0", "audio/mpeg"),
        (b"OggS\0\x02", "audio/ogg"),
        (b"\0\0\0\x20ftypisom", "video/mp4"),
        (b"RIFF\x24\x08\0\0AVI LIST", None),  # RIFF, but neither WebP nor WAVE
        (b"hello world", None),
        (b"", None),
    ],
)
def test_sniff_reads_the_magic_numbers(head: bytes, mime: str | None) -> None:
    assert sniff(head) == mime
    assert sniff_base64(base64.b64encode(head + b"\0" * 40).decode()) == mime


def test_sniff_base64_of_text_that_is_not_base64_is_none() -> None:
    assert sniff_base64("not base64 at all!") is None
    assert sniff_base64(PNG) == "image/png"


def test_media_event_decodes_its_payload_and_refuses_what_is_not_base64() -> None:
    media = llmroute.Media("m0", "image/png", PNG)
    assert media.type == "media" and media.to_bytes() == base64.b64decode(PNG)
    with pytest.raises(llmroute.InvalidProviderOutputError, match="'m1': data is not base64"):
        llmroute.Media("m1", "image/png", "abc...def").to_bytes()


# -- Gemini inline image output -------------------------------------------------------------------


def _chunk(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "responseId": "r1", "modelVersion": "gemini-3-pro-image-preview"}


IMAGE_STREAM = [
    _chunk({"text": "Composing the scene.", "thought": True}),
    _chunk({"inlineData": {"mimeType": "image/png", "data": PNG[:200]}, "thought": True}),  # interim
    _chunk({"text": "Here is your image:", "thoughtSignature": "sig-text"}),
    _chunk({"inlineData": {"mimeType": "image/png", "data": PNG}, "thoughtSignature": "sig-image"}),
    _chunk({"inlineData": {"data": PNG}}),  # no mimeType: read from the bytes
    _chunk({"text": "Enjoy."}, finish="STOP"),
]


async def _gemini(chunks: list[dict[str, Any]], chunking: Chunking | None = None) -> llmroute.LLMResponse:
    request = llmroute.request(model=GEMINI, prompt="Draw a cat.")
    response, _ = await replay_generate(sse_cassette(GEMINI_URL, chunks, done=False), request, chunking)
    assert event_order_problems(response.events) == []
    return response


@pytest.mark.anyio
@pytest.mark.parametrize(
    "chunking", [Chunking.whole(), Chunking.random(3, 512), Chunking.bytewise()], ids=str
)
async def test_gemini_inline_images_become_media(chunking: Chunking) -> None:
    response = await _gemini(IMAGE_STREAM, chunking)
    assert [(m.mime_type, m.data) for m in response.media] == [("image/png", PNG), ("image/png", PNG)]
    assert response.media[0].to_bytes().startswith(b"\x89PNG")
    assert response.media[0].provider_metadata == {"google": {"thoughtSignature": "sig-image"}}
    assert response.media[1].provider_metadata is None
    assert response.text == "Here is your image:Enjoy." and response.reasoning == "Composing the scene."
    kinds = [type(p).__name__ for p in response.message.content]
    assert kinds == ["ReasoningPart", "TextPart", "MediaPart", "MediaPart", "TextPart"]
    assert response.finish_reason == "stop"


@pytest.mark.anyio
async def test_gemini_image_goes_back_with_its_signature_in_the_next_turn() -> None:
    response = await _gemini(IMAGE_STREAM)
    follow_up = llmroute.request(
        model=GEMINI, messages=[llmroute.user("Draw a cat."), *response.messages], prompt="Make it blue."
    )
    body = json.loads((await llmroute.Client().prepare(follow_up)).body)
    model_parts = body["contents"][1]["parts"]
    images = [p for p in model_parts if "inlineData" in p]
    assert images == [
        {"inlineData": {"mimeType": "image/png", "data": PNG}, "thoughtSignature": "sig-image"},
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
    ]
    assert body["contents"][1]["role"] == "model" and body["contents"][2]["role"] == "user"


@pytest.mark.anyio
async def test_gemini_non_streamed_image_output_is_the_same_media() -> None:
    whole = _chunk({"text": "Here:"}, {"inlineData": {"mimeType": "image/png", "data": PNG}}, finish="STOP")
    url = GEMINI_URL.replace(":streamGenerateContent", ":generateContent")
    response_bytes = json.dumps(whole).encode()
    cassette = Cassette(
        [
            Interaction(
                RecordedRequest("POST", url, {}, b""),
                RecordedResponse(200, {"content-type": ["application/json"]}, response_bytes),
            )
        ]
    )
    request = llmroute.request(
        model=GEMINI, prompt="Draw.", generation=llmroute.GenerationOptions(stream=False)
    )
    response, _ = await replay_generate(cassette, request)
    assert [(m.mime_type, m.data) for m in response.media] == [("image/png", PNG)]


@pytest.mark.anyio
async def test_gemini_speech_keeps_the_type_gemini_names() -> None:
    """TTS models answer with raw PCM whose parameters only the named type carries."""
    mime = "audio/L16;codec=pcm;rate=24000"
    pcm = base64.b64encode(bytes(range(256)) * 4).decode()
    response = await _gemini([_chunk({"inlineData": {"mimeType": mime, "data": pcm}}, finish="STOP")])
    assert [(m.mime_type, m.data) for m in response.media] == [(mime, pcm)]


@pytest.mark.anyio
async def test_anthropic_leaves_out_images_another_model_produced() -> None:
    response = await _gemini(IMAGE_STREAM)
    model = anthropic.configure(api_key="sk-ant-test").messages("claude-sonnet-4-5")
    follow_up = llmroute.request(
        model=model, messages=[llmroute.user("Draw."), *response.messages], prompt="Nice?"
    )
    body = json.loads((await llmroute.Client().prepare(follow_up)).body)
    assistant = body["messages"][1]
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["text", "text"]


# -- Responses image_generation ---------------------------------------------------------------------


def _responses(name: str) -> tuple[Cassette, llmroute.Model, bool]:
    cassette = Cassette.load(CASSETTES / f"vercel-ai/{name}.yaml")
    # xAI's recordings through the Responses route pointed at api.x.ai (as test_vercel_fixtures does)
    base_url = "https://api.x.ai/v1" if name.startswith("xai/") else None
    model = openai.configure(base_url=base_url, api_key="sk-test").responses(cassette.metadata["model"])
    return cassette, model, cassette.metadata["streamed"]


def _recorded_items(cassette: Cassette, streamed: bool) -> list[dict[str, Any]]:
    """The ``image_generation_call`` items as recorded (plain json)."""
    body = cassette.interactions[0].response.body.decode()
    if not streamed:
        return [i for i in json.loads(body)["output"] if i["type"] == "image_generation_call"]
    items: list[dict[str, Any]] = []
    for line in body.splitlines():
        if line.startswith("data:"):
            event = json.loads(line[5:])
            if (
                event["type"] == "response.output_item.done"
                and event["item"]["type"] == "image_generation_call"
            ):
                items.append(event["item"])
    return items


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "mime"),
    [
        ("openai/responses/openai-image-generation-tool.1.chunks", "image/webp"),
        ("openai/responses/openai-image-generation-tool.1.json", "image/webp"),
        ("xai/responses/xai-image-generation-tool.1.chunks", "image/png"),  # no format, no magic: PNG
        ("xai/responses/xai-image-generation-tool.1.json", "image/png"),
    ],
)
async def test_responses_image_generation_results_become_media(name: str, mime: str) -> None:
    cassette, model, streamed = _responses(name)
    request = llmroute.request(
        model=model, prompt="x", generation=llmroute.GenerationOptions(stream=streamed)
    )
    response, _ = await replay_generate(cassette, request, Chunking.random(11) if streamed else None)
    (item,) = _recorded_items(cassette, streamed)
    (media,) = response.media
    assert (media.mime_type, media.data) == (mime, item["result"])
    assert media.provider_metadata == {"openai": {"item_id": item["id"]}}
    # the hosted call and its result are still there, before the media they produced
    kinds = [type(p).__name__ for p in response.message.content if not isinstance(p, llmroute.ReasoningPart)]
    assert kinds[:3] == ["ToolCallPart", "ToolResultPart", "MediaPart"]
    assert event_order_problems(response.events) == []


@pytest.mark.anyio
async def test_a_truncated_recorded_image_is_sniffed_but_not_decodable() -> None:
    """The Vercel recordings shorten long images with ``...``: the head still names WebP, and
    decoding says what is wrong instead of returning garbage."""
    cassette, model, _ = _responses("openai/responses/openai-image-generation-tool.1.chunks")
    response, _ = await replay_generate(cassette, llmroute.request(model=model, prompt="x"))
    assert "..." in response.media[0].data
    with pytest.raises(llmroute.InvalidProviderOutputError, match="not base64"):
        response.media[0].to_bytes()


@pytest.mark.anyio
async def test_responses_history_resends_the_image_generation_item_not_the_media() -> None:
    cassette, model, _ = _responses("openai/responses/openai-image-generation-tool.1.json")
    generation = llmroute.GenerationOptions(stream=False)
    response, _ = await replay_generate(
        cassette, llmroute.request(model=model, prompt="x", generation=generation)
    )
    follow_up = llmroute.request(
        model=model, messages=[llmroute.user("x"), *response.messages], prompt="more"
    )
    body = json.loads((await llmroute.Client().prepare(follow_up)).body)
    (item,) = _recorded_items(cassette, False)
    sent = [i for i in body["input"] if i.get("type") == "image_generation_call"]
    assert [i["id"] for i in sent] == [item["id"]]
    assert not any(i.get("type") in ("input_image", "output_image") for i in body["input"])


# -- Chat: OpenRouter / gateway image output ---------------------------------------------------------

OPENROUTER = openrouter.configure("test-key").chat("google/gemini-2.5-flash-image")
OPENROUTER_URL = "https://openrouter.ai/api/v1/chat/completions"


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "gen-1",
        "model": "google/gemini-2.5-flash-image",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


@pytest.mark.anyio
@pytest.mark.parametrize(
    "chunking", [Chunking.whole(), Chunking.random(5, 256), Chunking.bytewise()], ids=str
)
async def test_chat_images_become_media(chunking: Chunking) -> None:
    chunks = [
        _chat_chunk({"role": "assistant", "content": "Here it is."}),
        _chat_chunk({"images": [_image(f"data:image/png;base64,{PNG}")]}),
        _chat_chunk({"images": [_image(f"data:;base64,{PNG}"), _image("https://example.com/cat.png")]}),
        _chat_chunk({}, finish="stop"),
    ]
    options = {"openrouter": {"modalities": ["image", "text"]}}
    request = llmroute.request(model=OPENROUTER, prompt="Draw a cat.", provider_options=options)
    response, transport = await replay_generate(sse_cassette(OPENROUTER_URL, chunks), request, chunking)
    assert json.loads(transport.requests[0].content)["modalities"] == ["image", "text"]
    # the second one names no type: read from the bytes; a plain URL is not produced media
    assert [(m.id, m.mime_type, m.data) for m in response.media] == [
        ("image-0", "image/png", PNG),
        ("image-1", "image/png", PNG),
    ]
    assert [type(p).__name__ for p in response.message.content] == ["TextPart", "MediaPart", "MediaPart"]
    assert response.text == "Here it is." and response.finish_reason == "stop"
    assert event_order_problems(response.events) == []


@pytest.mark.anyio
async def test_chat_non_streamed_message_images_become_media() -> None:
    completion = {
        "id": "gen-1",
        "model": "google/gemini-2.5-flash-image",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "",
                    "images": [_image(f"data:image/png;base64,{PNG}")],
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1290, "total_tokens": 1295},
    }
    cassette = Cassette(
        [
            Interaction(
                RecordedRequest("POST", OPENROUTER_URL, {}, b""),
                RecordedResponse(
                    200, {"content-type": ["application/json"]}, json.dumps(completion).encode()
                ),
            )
        ]
    )
    generation = llmroute.GenerationOptions(stream=False)
    response, _ = await replay_generate(
        cassette, llmroute.request(model=OPENROUTER, prompt="x", generation=generation)
    )
    assert [(m.mime_type, m.data) for m in response.media] == [("image/png", PNG)]


@pytest.mark.anyio
async def test_bedrock_converse_leaves_out_images_another_model_produced() -> None:
    response = await _gemini(IMAGE_STREAM)
    model = bedrock.configure(region="us-east-1", api_key="test-bedrock-key").converse("amazon.nova-pro-v1:0")
    follow_up = llmroute.request(
        model=model, messages=[llmroute.user("Draw."), *response.messages], prompt="Nice?"
    )
    body = json.loads((await llmroute.Client().prepare(follow_up)).body)
    assistant = body["messages"][1]
    assert assistant["role"] == "assistant"
    assert not any("image" in block for block in assistant["content"])
    assert [b["text"] for b in assistant["content"] if "text" in b] == ["Here is your image:", "Enjoy."]


# -- the tool loop ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_tool_loop_carries_a_generated_image_into_the_next_step() -> None:
    """Step 1 draws and calls a tool; step 2 answers. The image (and its signature) is in the
    second request's model turn, and ``response.media`` covers both steps."""

    @llmroute.tool
    def caption(style: str) -> str:
        """Caption the image."""
        return f"a {style} cat"

    first = [
        _chunk(
            {"inlineData": {"mimeType": "image/png", "data": PNG}, "thoughtSignature": "sig-image"},
            {"functionCall": {"name": "caption", "args": {"style": "blue"}, "id": "c1"}},
            finish="STOP",
        )
    ]
    second = [_chunk({"text": "Done: a blue cat."}, finish="STOP")]
    cassette = Cassette(
        [
            *sse_cassette(GEMINI_URL, first, done=False).interactions,
            *sse_cassette(GEMINI_URL, second, done=False).interactions,
        ]
    )
    request = llmroute.request(model=GEMINI, prompt="Draw and caption a cat.")
    response, transport = await replay_generate(
        cassette, request, tools=[caption], stop_when=llmroute.step_count_is(3)
    )
    assert len(transport.requests) == 2
    model_turn = json.loads(transport.requests[1].content)["contents"][1]
    assert model_turn["role"] == "model"
    assert model_turn["parts"][0] == {
        "inlineData": {"mimeType": "image/png", "data": PNG},
        "thoughtSignature": "sig-image",
    }
    assert [m.data for m in response.media] == [PNG] and response.text == "Done: a blue cat."


# -- Chat: spoken output (OpenAI audio models) -----------------------------------------------------

AUDIO_MODEL = openai.configure(api_key="sk-test").chat("gpt-4o-audio-preview")
CHAT_URL = "https://api.openai.com/v1/chat/completions"


def _wav(frames: bytes) -> bytes:
    import io
    import wave

    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(24000)
        out.writeframes(frames)
    return buffer.getvalue()


PCM = bytes(range(256)) * 8  # 2 KiB of 16-bit samples


@pytest.mark.anyio
@pytest.mark.parametrize(
    "chunking", [Chunking.whole(), Chunking.random(9, 128), Chunking.bytewise()], ids=str
)
async def test_chat_streamed_audio_pieces_become_one_clip_and_the_transcript_text(chunking: Chunking) -> None:
    pieces = [PCM[:700], PCM[700:701], PCM[701:]]  # each piece is base64-encoded on its own
    chunks = [
        _chat_chunk({"role": "assistant", "audio": {"id": "audio_1", "transcript": "Hello"}}),
        *(_chat_chunk({"audio": {"data": base64.b64encode(p).decode()}}) for p in pieces),
        _chat_chunk({"audio": {"transcript": " there.", "expires_at": 1750000000}}),
        _chat_chunk({}, finish="stop"),
    ]
    options = {"openai": {"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "pcm16"}}}
    request = llmroute.request(model=AUDIO_MODEL, prompt="Say hello.", provider_options=options)
    response, transport = await replay_generate(sse_cassette(CHAT_URL, chunks), request, chunking)
    sent = json.loads(transport.requests[0].content)
    assert sent["modalities"] == ["text", "audio"] and sent["audio"]["format"] == "pcm16"
    (clip,) = response.media
    assert (clip.id, clip.mime_type, clip.to_bytes()) == ("audio_1", "audio/pcm", PCM)
    assert clip.provider_metadata == {"openai": {"audio": {"id": "audio_1", "expires_at": 1750000000}}}
    assert response.text == "Hello there." and response.finish_reason == "stop"
    assert [type(p).__name__ for p in response.message.content] == ["TextPart", "MediaPart"]
    assert event_order_problems(response.events) == []


@pytest.mark.anyio
async def test_chat_non_streamed_audio_is_sniffed_from_its_bytes() -> None:
    wav = _wav(PCM)
    audio = {"id": "audio_2", "data": base64.b64encode(wav).decode(), "transcript": "Hi.", "expires_at": 1}
    completion = {
        "id": "chatcmpl-1",
        "model": "gpt-4o-audio-preview",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "audio": audio},
                "finish_reason": "stop",
            }
        ],
    }
    cassette = Cassette(
        [
            Interaction(
                RecordedRequest("POST", CHAT_URL, {}, b""),
                RecordedResponse(
                    200, {"content-type": ["application/json"]}, json.dumps(completion).encode()
                ),
            )
        ]
    )
    generation = llmroute.GenerationOptions(stream=False)
    response, _ = await replay_generate(
        cassette, llmroute.request(model=AUDIO_MODEL, prompt="x", generation=generation)
    )
    (clip,) = response.media
    assert (clip.mime_type, clip.to_bytes(), response.text) == ("audio/wav", wav, "Hi.")


@pytest.mark.anyio
async def test_chat_audio_piece_that_is_not_base64_is_invalid_output() -> None:
    chunks = [_chat_chunk({"audio": {"data": "not*base64"}}), _chat_chunk({}, finish="stop")]
    with pytest.raises(llmroute.InvalidProviderOutputError, match="audio data is not base64"):
        await replay_generate(
            sse_cassette(CHAT_URL, chunks),
            llmroute.request(model=AUDIO_MODEL, prompt="x"),
            retry=llmroute.RetryPolicy.none(),
        )
