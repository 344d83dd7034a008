"""ai_task.evaluate: probabilities for noul, choice and score questions."""
