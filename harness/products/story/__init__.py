"""The story (`harness story`): a ladder's chapters as runs, their verdicts, numbers, figures and page."""

# the file that makes a directory a story's: here, so `harness report DIR` can tell without loading the story
STORY_JSON = "story.json"
