"""pydantic models as a tool's parameters and as structured output (pip install 'llmroute[pydantic]').
Needs OPENAI_API_KEY."""

import pydantic

import llmroute
from llmroute.providers import openai


class Recipe(pydantic.BaseModel):
    name: str
    minutes: int = pydantic.Field(ge=1)
    ingredients: list[str]


class Lookup(pydantic.BaseModel):
    dish: str


@llmroute.tool
def pantry(args: Lookup) -> list[str]:
    """What is in the pantry for a dish."""
    return ["eggs", "flour", "milk"] if args.dish else []


model = openai.configure().chat("gpt-4o-mini")
with llmroute.SyncClient() as client:
    recipe, response = client.generate_object(
        llmroute.request(model, prompt="A quick pancake recipe."), Recipe
    )
    print(recipe.name, recipe.minutes, recipe.ingredients)
    answer = client.generate(llmroute.request(model, prompt="Can I make pancakes?"), tools=[pantry])
    print(answer.text)
